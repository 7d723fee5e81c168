#include "adam.hpp"

#include "cuda_check.hpp"

namespace ptdp::fused {

__global__ void adam_kernel(const AdamTensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks,
                            AdamHyper h) {
  const ChunkRef c = chunks[blockIdx.x];
  const AdamTensor t = tensors[c.tensor];
  const int64_t begin = int64_t(c.chunk) * kChunkElements;
  const int64_t end = min(t.numel, begin + kChunkElements);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float g = t.grad[i] * h.grad_scale;
    const float m = h.beta1 * t.exp_avg[i] + (1.0f - h.beta1) * g;
    const float v = h.beta2 * t.exp_avg_sq[i] + (1.0f - h.beta2) * g * g;
    const float p = t.param[i];
    const float update = (m / h.bias_correction1) / (sqrtf(v / h.bias_correction2) + h.eps);
    const float next = p - h.lr * (update + t.weight_decay * p);
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
    t.param[i] = next;
    if (t.working) t.working[i] = __float2bfloat16(next);
  }
}

void adam_step(const void* metadata, size_t chunks_offset, int chunk_count, const AdamHyper& hyper,
               const KernelContext& ctx) {
  if (chunk_count == 0) return;
  const auto* tensors = static_cast<const AdamTensor*>(metadata);
  const auto* chunks = reinterpret_cast<const ChunkRef*>(static_cast<const char*>(metadata) + chunks_offset);
  adam_kernel<<<static_cast<unsigned>(chunk_count), 512, 0, ctx.stream>>>(tensors, chunks, hyper);
  PTDP_LAUNCH_CHECK(adam_kernel);
}

}  // namespace ptdp::fused
