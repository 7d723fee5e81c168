#include "runtime/parameter_init.hpp"

#include <algorithm>
#include <cmath>
#include <thread>
#include <string_view>

#include <ptdp/counter_rng.hpp>

namespace ptdp {

namespace {
void check_part_shape(const ParamRef& ref) {
  PTDP_CHECK(ref.global_shape.size() == ref.master.shape.size(),
             "parameter '" + ref.name + "': local shape " + shape_string(ref.master.shape) +
                 " does not match the rank of global shape " + shape_string(ref.global_shape));
}
}  // namespace

void for_each_global_index(const ParamRef& ref, const std::function<void(int64_t, int64_t)>& fn, int64_t begin,
                           int64_t end) {
  check_part_shape(ref);
  const auto& global = ref.global_shape;
  const auto& local = ref.master.shape;
  const int rank = static_cast<int>(global.size());
  std::vector<int64_t> global_stride(rank, 1);
  for (int i = rank - 2; i >= 0; --i) global_stride[i] = global_stride[i + 1] * global[i + 1];
  const int64_t n = end < 0 ? ref.master.numel() : end;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
    idx[d] = rest % local[d];
    rest /= local[d];
  }
  for (int64_t local_i = begin; local_i < n; ++local_i) {
    int64_t g = 0;
    for (int d = 0; d < rank; ++d)
      g += (idx[d] + (d == ref.shard_dim ? ref.shard_offset : 0)) * global_stride[d];
    fn(local_i, g);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < local[d]) break;
      idx[d] = 0;
    }
  }
}

namespace {
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

std::vector<float> initial_values(const ParamRef& ref, uint64_t seed, int layers, int vocab) {
  std::vector<float> values(static_cast<size_t>(ref.master.numel()));
  const std::string_view name = ref.name;
  const bool layer_norm = name.find(".ln") != std::string_view::npos || name.rfind("ln", 0) == 0;
  if (ends_with(name, ".bias")) return values;  // zeros
  if (layer_norm) {
    std::fill(values.begin(), values.end(), 1.0f);
    return values;
  }
  float std = 0.02f;
  if (ends_with(name, "attn.proj.weight") || ends_with(name, "mlp.fc2.weight"))
    std = 0.02f / std::sqrt(2.0f * static_cast<float>(layers));
  const uint64_t key = rng::name_key(seed, name);
  const bool word_embedding = name == "embedding.word";
  const int64_t row_size = ref.global_shape.empty() ? 1 : ref.global_shape.back();
  auto draw = [&](int64_t local_i, int64_t global_i) {
    if (word_embedding && global_i / row_size >= vocab) return;  // padded rows stay 0
    values[static_cast<size_t>(local_i)] = std * rng::normal(key, 0, static_cast<uint64_t>(global_i));
  };
  check_part_shape(ref);  // before the threads, so a bad shape is an error, not a crash
  const int64_t n = ref.master.numel();
  const int64_t threads = std::clamp<int64_t>(n / (1 << 20), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { for_each_global_index(ref, draw, n * t / threads, n * (t + 1) / threads); });
  for (auto& w : workers) w.join();
  return values;
}

}  // namespace ptdp
