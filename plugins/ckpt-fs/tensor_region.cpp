#include "tensor_region.hpp"

#include <algorithm>

#include <ptdp/tensor.hpp>

namespace ptdp::ckptfs {

int64_t volume(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string region_problem(const Region& r, const std::vector<int64_t>& global_shape) {
  if (r.offset.size() != global_shape.size() || r.shape.size() != global_shape.size())
    return "offset " + shape_string(r.offset) + " and shape " + shape_string(r.shape) +
           " do not have the rank of global shape " + shape_string(global_shape);
  for (size_t d = 0; d < global_shape.size(); ++d) {
    if (global_shape[d] < 0 || r.shape[d] < 0 || r.offset[d] < 0 ||
        r.offset[d] + r.shape[d] > global_shape[d])
      return "offset " + shape_string(r.offset) + " shape " + shape_string(r.shape) +
             " lies outside global shape " + shape_string(global_shape);
  }
  return {};
}

std::optional<Region> intersect(const Region& a, const Region& b) {
  Region out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    int64_t lo = std::max(a.offset[d], b.offset[d]);
    int64_t hi = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    if (hi <= lo) return std::nullopt;
    out.offset.push_back(lo);
    out.shape.push_back(hi - lo);
  }
  return out;
}

int64_t flat_index(const Region& in, const std::vector<int64_t>& at) {
  int64_t index = 0;
  for (size_t d = 0; d < in.shape.size(); ++d) index = index * in.shape[d] + (at[d] - in.offset[d]);
  return index;
}

}  // namespace ptdp::ckptfs
