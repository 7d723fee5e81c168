#include "zero_fill.hpp"

#include <algorithm>

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

constexpr int kSpansPerLaunch = 16;
constexpr int kThreads = 256;

struct SpanList {
  float* data[kSpansPerLaunch];
  const float* from[kSpansPerLaunch];  // null: zero the span (zero_fill)
  int64_t count[kSpansPerLaunch];
};

// blockIdx.y picks the span; the x blocks stride over it.
__global__ void span_kernel(SpanList list) {
  float* data = list.data[blockIdx.y];
  const float* from = list.from[blockIdx.y];
  const int64_t count = list.count[blockIdx.y];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    data[i] = from ? data[i] + from[i] : 0.0f;
}

void launch_spans(const std::vector<FloatSpanSum>& spans, cudaStream_t stream) {
  for (size_t first = 0; first < spans.size(); first += kSpansPerLaunch) {
    const size_t n = std::min<size_t>(kSpansPerLaunch, spans.size() - first);
    SpanList list{};
    int64_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
      list.data[i] = spans[first + i].to.data;
      list.from[i] = spans[first + i].from;
      list.count[i] = spans[first + i].to.count;
      longest = std::max(longest, spans[first + i].to.count);
    }
    if (longest == 0) continue;
    const int blocks = static_cast<int>(std::min<int64_t>((longest + kThreads - 1) / kThreads, 1024));
    span_kernel<<<dim3(blocks, static_cast<unsigned>(n)), kThreads, 0, stream>>>(list);
    PTDP_LAUNCH_CHECK(span_kernel);
  }
}

}  // namespace

void zero_fill(const std::vector<FloatSpan>& spans, cudaStream_t stream) {
  std::vector<FloatSpanSum> zeroed;
  for (const FloatSpan& span : spans) zeroed.push_back({span, nullptr});
  launch_spans(zeroed, stream);
}

void add_spans(const std::vector<FloatSpanSum>& sums, cudaStream_t stream) { launch_spans(sums, stream); }

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
