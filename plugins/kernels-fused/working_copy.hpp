#pragma once
// act_t working copies of fp32 master weights, refreshed in one multi-tensor launch; where the
// core keeps only a shard of the master (the distributed optimizer), also the fp32 values that
// the kernels read.
#include <cstdint>

#include "kernel_context.hpp"
#include "multi_tensor.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct CastTensor {
  const float* source;
  act_t* target;        // or null
  int64_t numel;
  float* fp32_target;   // or null
};

// metadata: a device copy of pack_multi_tensor(std::vector<CastTensor>).
void refresh_working_copies(const void* metadata, size_t chunks_offset, int chunk_count, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
