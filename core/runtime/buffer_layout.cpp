#include "runtime/buffer_layout.hpp"

#include <algorithm>

#include <ptdp/error.hpp>

namespace ptdp {

namespace {
int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }
}  // namespace

BufferLayout plan_buffer_layout(const std::vector<LayoutEntry>& params, int64_t bucket_elements, int data_parallel) {
  PTDP_CHECK(bucket_elements > 0 && data_parallel > 0, "plan_buffer_layout: bucket size and d must be positive");
  BufferLayout layout;
  layout.offsets.assign(params.size(), 0);
  const int64_t bucket_multiple = kAlignElements * data_parallel;
  GradientBucket open;
  int64_t used = 0;  // elements placed in the open bucket
  auto close = [&] {
    if (open.params.empty()) return;
    open.size = round_up(used, bucket_multiple);
    layout.size = open.offset + open.size;
    layout.buckets.push_back(open);
    open = GradientBucket{};
    open.offset = layout.size;
    used = 0;
  };
  for (size_t k = params.size(); k-- > 0;) {
    const LayoutEntry& p = params[k];
    if (p.alone) close();
    if (open.params.empty()) {
      open.final_after_unit = p.unit;
      open.alone = p.alone;
    }
    layout.offsets[k] = open.offset + used;
    open.params.push_back(k);
    open.final_after_unit = std::min(open.final_after_unit, p.unit);
    used = round_up(used + p.numel, kAlignElements);
    if (p.alone || used >= bucket_elements) close();
  }
  close();
  return layout;
}

std::vector<ParamRange> params_in_range(const BufferLayout& layout, const std::vector<LayoutEntry>& params,
                                        int64_t begin, int64_t end) {
  std::vector<ParamRange> ranges;
  for (size_t k = 0; k < params.size(); ++k) {
    const int64_t first = std::max(begin, layout.offsets[k]);
    const int64_t last = std::min(end, layout.offsets[k] + params[k].numel);
    if (first < last) ranges.push_back({k, first - layout.offsets[k], last - first});
  }
  std::sort(ranges.begin(), ranges.end(),
            [&](const ParamRange& a, const ParamRange& b) { return layout.offsets[a.param] < layout.offsets[b.param]; });
  return ranges;
}

}  // namespace ptdp
