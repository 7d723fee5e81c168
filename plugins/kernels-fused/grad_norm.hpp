#pragma once
// The global gradient norm's local part: the sum of squares of a list of fp32 tensors, in one
// multi-tensor launch, accumulated in double and reduced in a fixed order.
#include <cstdint>

#include "kernel_context.hpp"
#include "multi_tensor.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct SquareSumTensor {
  const float* data;
  int64_t numel;
};

// metadata: a device copy of pack_multi_tensor(std::vector<SquareSumTensor>). Writes the sum to
// result (one double on the device) and, when given, rounded to as_float (one float there).
void sum_of_squares(const void* metadata, size_t chunks_offset, int chunk_count, double* result,
                    const KernelContext& ctx, float* as_float = nullptr);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
