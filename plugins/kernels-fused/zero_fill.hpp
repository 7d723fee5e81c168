#pragma once
// Zeroes a handful of fp32 tensors in one launch, or adds a handful to as many others, their
// addresses passed as kernel arguments: a block's eight bias and LayerNorm gradients on the step's
// first backward cost one launch, not eight memsets, and so do the eight partial sums a split
// backward's weight part adds to them.
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct FloatSpan {
  float* data;
  int64_t count;
};

void zero_fill(const std::vector<FloatSpan>& spans, cudaStream_t stream);

// to.data[i] += from[i] for each pair, i < to.count.
struct FloatSpanSum {
  FloatSpan to;
  const float* from;
};

void add_spans(const std::vector<FloatSpanSum>& sums, cudaStream_t stream);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
