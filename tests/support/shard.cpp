#include "support/shard.hpp"

#include <cstring>

namespace ptdp::test {

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ShardLayout shard_layout(const ParamRef& p) {
  ShardLayout l{p.name, p.global_shape, p.shard_dim, p.shard_offset, p.master.shape};
  auto bad = [&](const std::string& why) {
    return Error("parameter " + p.name + ": local part " + shape_string(l.local_shape) + " at offset " +
                 std::to_string(l.shard_offset) + " of dim " + std::to_string(l.shard_dim) +
                 " does not fit global shape " + shape_string(l.global_shape) + ": " + why);
  };
  const int rank = static_cast<int>(l.global_shape.size());
  if (static_cast<int>(l.local_shape.size()) != rank) throw bad("different number of dimensions");
  if (l.shard_dim < -1 || l.shard_dim >= rank) throw bad("no such dimension");
  if (l.shard_dim == -1 && l.shard_offset != 0) throw bad("a whole tensor has offset 0");
  for (int d = 0; d < rank; ++d) {
    if (d == l.shard_dim) {
      if (l.shard_offset < 0 || l.shard_offset + l.local_shape[d] > l.global_shape[d]) throw bad("out of range");
    } else if (l.local_shape[d] != l.global_shape[d]) {
      throw bad("dimension " + std::to_string(d) + " differs");
    }
  }
  return l;
}

namespace {

// Visits the contiguous runs that make up a rank's part: (global offset, local offset, length).
template <class Fn>
void for_each_run(const ShardLayout& l, Fn fn) {
  const int64_t total = element_count(l.local_shape);
  if (l.shard_dim < 0) {
    fn(int64_t{0}, int64_t{0}, total);
    return;
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < l.shard_dim; ++d) outer *= l.global_shape[d];
  for (size_t d = l.shard_dim + 1; d < l.global_shape.size(); ++d) inner *= l.global_shape[d];
  const int64_t run = l.local_shape[l.shard_dim] * inner;
  for (int64_t o = 0; o < outer; ++o)
    fn((o * l.global_shape[l.shard_dim] + l.shard_offset) * inner, o * run, run);
}

void check_sizes(const ShardLayout& l, size_t local, size_t global) {
  if (static_cast<int64_t>(local) != element_count(l.local_shape) ||
      static_cast<int64_t>(global) != element_count(l.global_shape))
    throw Error("parameter " + l.name + ": " + std::to_string(local) + " local and " + std::to_string(global) +
                " global values for local shape " + shape_string(l.local_shape) + " of " +
                shape_string(l.global_shape));
}

}  // namespace

std::vector<float> slice_global(const ShardLayout& l, const std::vector<float>& global) {
  std::vector<float> local(static_cast<size_t>(element_count(l.local_shape)));
  check_sizes(l, local.size(), global.size());
  for_each_run(l, [&](int64_t g, int64_t loc, int64_t n) {
    std::memcpy(&local[loc], &global[g], sizeof(float) * n);
  });
  return local;
}

void place_local(const ShardLayout& l, const std::vector<float>& local, std::vector<float>& global) {
  check_sizes(l, local.size(), global.size());
  for_each_run(l, [&](int64_t g, int64_t loc, int64_t n) {
    std::memcpy(&global[g], &local[loc], sizeof(float) * n);
  });
}

TensorMap assemble(const std::vector<std::vector<LocalTensor>>& per_rank) {
  TensorMap out;
  std::map<std::string, std::vector<int>> holder;  // which rank wrote each element (-1: none)
  for (size_t r = 0; r < per_rank.size(); ++r) {
    for (const LocalTensor& t : per_rank[r]) {
      const ShardLayout& l = t.layout;
      HostTensor& g = out[l.name];
      std::vector<int>& who = holder[l.name];
      if (g.shape.empty()) {
        g.shape = l.global_shape;
        g.values.assign(static_cast<size_t>(element_count(l.global_shape)), 0.0f);
        who.assign(g.values.size(), -1);
      } else if (g.shape != l.global_shape) {
        throw Error("parameter " + l.name + ": rank " + std::to_string(r) + " says global shape " +
                    shape_string(l.global_shape) + ", another rank " + shape_string(g.shape));
      }
      check_sizes(l, t.values.size(), g.values.size());
      for_each_run(l, [&](int64_t goff, int64_t loff, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const float v = t.values[loff + i];
          int& w = who[goff + i];
          if (w >= 0 && std::memcmp(&g.values[goff + i], &v, sizeof(float)) != 0)
            throw Error("parameter " + l.name + ": element " + std::to_string(goff + i) + " is " +
                        std::to_string(g.values[goff + i]) + " on rank " + std::to_string(w) + " but " +
                        std::to_string(v) + " on rank " + std::to_string(r));
          g.values[goff + i] = v;
          w = static_cast<int>(r);
        }
      });
    }
  }
  for (const auto& [name, who] : holder)
    for (size_t i = 0; i < who.size(); ++i)
      if (who[i] < 0) throw Error("parameter " + name + ": element " + std::to_string(i) + " is held by no rank");
  return out;
}

}  // namespace ptdp::test
