#include "working_copy.hpp"

#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

__global__ void cast_chunks_kernel(const CastTensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks) {
  const ChunkRef c = chunks[blockIdx.x];
  const CastTensor t = tensors[c.tensor];
  const int64_t begin = int64_t(c.chunk) * kChunkElements;
  const int64_t end = min(t.numel, begin + kChunkElements);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = t.source[i];
    if (t.target) t.target[i] = to_act(v);
    if (t.fp32_target) t.fp32_target[i] = v;
  }
}

void refresh_working_copies(const void* metadata, size_t chunks_offset, int chunk_count, const KernelContext& ctx) {
  if (chunk_count == 0) return;
  const auto* tensors = static_cast<const CastTensor*>(metadata);
  const auto* chunks = reinterpret_cast<const ChunkRef*>(static_cast<const char*>(metadata) + chunks_offset);
  cast_chunks_kernel<<<static_cast<unsigned>(chunk_count), 512, 0, ctx.stream>>>(tensors, chunks);
  PTDP_LAUNCH_CHECK(cast_chunks_kernel);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
