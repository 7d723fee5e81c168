#pragma once
// Boxes inside a global tensor (offset + shape per dimension) and the contiguous runs two
// row-major layouts have in common: the arithmetic behind resharding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ptdp::ckptfs {

struct Region {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;
};

int64_t volume(const std::vector<int64_t>& shape);

// Empty string when `r` is a valid box inside `global_shape`, else why not.
std::string region_problem(const Region& r, const std::vector<int64_t>& global_shape);

// The common part of two boxes of the same rank; nullopt when it holds no element.
std::optional<Region> intersect(const Region& a, const Region& b);

// Flat (row-major) element index of global coordinate `at` inside the box `in`.
int64_t flat_index(const Region& in, const std::vector<int64_t>& at);

// Calls fn(flat_in_a, flat_in_b, count) for every run of `part` (a box inside both `a` and `b`)
// that is contiguous in both layouts, in increasing order. Trailing dimensions that `part`,
// `a` and `b` all span entirely merge into one run.
template <class Fn>
void for_each_run(const Region& a, const Region& b, const Region& part, Fn&& fn) {
  const size_t rank = part.shape.size();
  if (volume(part.shape) == 0) return;
  if (rank == 0) {
    fn(int64_t{0}, int64_t{0}, int64_t{1});
    return;
  }
  // Dimensions [merged, rank) form one run; `merged` >= 1 keeps one dimension to step along.
  size_t merged = rank - 1;
  int64_t run = part.shape[rank - 1];
  while (merged > 0 && part.shape[merged] == a.shape[merged] && part.shape[merged] == b.shape[merged]) {
    --merged;
    run *= part.shape[merged];
  }
  std::vector<int64_t> at = part.offset;
  while (true) {
    fn(flat_index(a, at), flat_index(b, at), run);
    // Odometer over the dimensions before `merged`.
    size_t d = merged;
    while (d > 0) {
      --d;
      if (++at[d] < part.offset[d] + part.shape[d]) break;
      at[d] = part.offset[d];
      if (d == 0) return;
    }
    if (merged == 0) return;
  }
}

}  // namespace ptdp::ckptfs
