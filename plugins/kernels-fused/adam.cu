#include "adam.hpp"

#include "fp8_amax.cuh"
#include "ptdp/checked_call_cuda.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

namespace {

struct Moments {
  float param, exp_avg, exp_avg_sq;
};

__device__ __forceinline__ Moments adam_update(float p, float grad, float m, float v, float weight_decay,
                                               const AdamHyper& h) {
  const float g = grad * h.grad_scale;
  m = h.beta1 * m + (1.0f - h.beta1) * g;
  v = h.beta2 * v + (1.0f - h.beta2) * g * g;
  const float update = (m / h.bias_correction1) / (sqrtf(v / h.bias_correction2) + h.eps);
  return {p - h.lr * (update + weight_decay * p), m, v};
}

// The E4M3 byte of value under scale, as fp8_cast rounds it (nearest even, saturating).
__device__ __forceinline__ __nv_fp8_storage_t to_e4m3(float value, float scale) {
  return __nv_cvt_float_to_fp8(value * scale, __NV_SATFINITE, __NV_E4M3);
}

// update false: the values stay as they are (a step whose gradient norm is not finite); only the
// FP8 copy is written.
__device__ __forceinline__ void adam_scalar(const AdamTensor& t, int64_t i, const AdamHyper& h, bool update,
                                            float fp8_scale, int& amax_bits) {
  float p = t.param[i];
  if (update) {
    const Moments r = adam_update(p, t.grad[i], t.exp_avg[i], t.exp_avg_sq[i], t.weight_decay, h);
    p = r.param;
    t.param[i] = r.param;
    t.exp_avg[i] = r.exp_avg;
    t.exp_avg_sq[i] = r.exp_avg_sq;
    if (t.working) t.working[i] = to_act(r.param);
  }
  if (t.fp8) {
    t.fp8[i] = to_e4m3(p, fp8_scale);
    amax_bits = max_bits(amax_bits, magnitude_bits(p));
  }
}

// Whether every array of `t` allows 16-byte loads of fp32 (8-byte stores of bf16, 4-byte ones of
// FP8) at element offsets that are multiples of 4. Views into contiguous gradient and parameter
// buffers start anywhere, so this is decided per tensor.
__device__ __forceinline__ bool vectorizable(const AdamTensor& t) {
  const auto a16 = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
  return a16(t.param) && a16(t.grad) && a16(t.exp_avg) && a16(t.exp_avg_sq) &&
         (reinterpret_cast<uintptr_t>(t.working) & 7) == 0 && (reinterpret_cast<uintptr_t>(t.fp8) & 3) == 0;
}

// Adam moves 30 bytes per element and computes little: it is bound by DRAM bandwidth. With
// 4-byte accesses it reached 65% of the H200's, with 16-byte ones (more bytes in flight per
// thread) 83% (BENCHMARKS.md, 2026-12-01). An FP8 copy adds one byte written per element, where a
// cast at the next forward would read the four of the master again and write the byte.
__global__ void adam_kernel(const AdamTensor* __restrict__ tensors, const ChunkRef* __restrict__ chunks,
                            AdamHyper h) {
  bool update = true;
  if (h.grad_sum_squares) {
    // ptdp::grad_clip_scale (layer_kernels.hpp), on the device, so the host need not wait for it,
    // from the true norm: the sum is of the loss-scaled gradients.
    const double norm = sqrt(double(*h.grad_sum_squares)) / h.loss_scale;
    update = isfinite(norm);
    if (update)
      h.grad_scale = (h.max_grad_norm > 0 && norm > h.max_grad_norm) ? float(h.max_grad_norm / (norm + 1e-6)) : 1.0f;
  }
  // One factor takes the loss scale out and clips (exact for a power-of-two loss scale).
  h.grad_scale /= h.loss_scale;
  const ChunkRef c = chunks[blockIdx.x];
  const AdamTensor t = tensors[c.tensor];
  if (!update && !t.fp8) return;
  const float fp8_scale = t.fp8 ? *t.fp8_scale : 0.0f;
  int amax_bits = 0;
  const int64_t begin = int64_t(c.chunk) * kChunkElements;
  const int64_t end = min(t.numel, begin + kChunkElements);
  int64_t scalar_begin = begin;
  if (vectorizable(t)) {  // the chunk starts at a multiple of kChunkElements, hence of 4
    const int64_t quads = (end - begin) / 4;
    for (int64_t q = threadIdx.x; q < quads; q += blockDim.x) {
      const int64_t i = begin + 4 * q;
      float4 p = *reinterpret_cast<const float4*>(t.param + i);
      if (update) {
        const float4 g = *reinterpret_cast<const float4*>(t.grad + i);
        const float4 m = *reinterpret_cast<const float4*>(t.exp_avg + i);
        const float4 v = *reinterpret_cast<const float4*>(t.exp_avg_sq + i);
        const Moments r0 = adam_update(p.x, g.x, m.x, v.x, t.weight_decay, h);
        const Moments r1 = adam_update(p.y, g.y, m.y, v.y, t.weight_decay, h);
        const Moments r2 = adam_update(p.z, g.z, m.z, v.z, t.weight_decay, h);
        const Moments r3 = adam_update(p.w, g.w, m.w, v.w, t.weight_decay, h);
        p = make_float4(r0.param, r1.param, r2.param, r3.param);
        *reinterpret_cast<float4*>(t.param + i) = p;
        *reinterpret_cast<float4*>(t.exp_avg + i) = make_float4(r0.exp_avg, r1.exp_avg, r2.exp_avg, r3.exp_avg);
        *reinterpret_cast<float4*>(t.exp_avg_sq + i) =
            make_float4(r0.exp_avg_sq, r1.exp_avg_sq, r2.exp_avg_sq, r3.exp_avg_sq);
        if (t.working) {
          act2_t lo = to_act2(r0.param, r1.param), hi = to_act2(r2.param, r3.param);
          uint2 packed;
          packed.x = *reinterpret_cast<uint32_t*>(&lo);
          packed.y = *reinterpret_cast<uint32_t*>(&hi);
          *reinterpret_cast<uint2*>(t.working + i) = packed;
        }
      }
      if (t.fp8) {
        const uint32_t packed = uint32_t(to_e4m3(p.x, fp8_scale)) | uint32_t(to_e4m3(p.y, fp8_scale)) << 8 |
                                uint32_t(to_e4m3(p.z, fp8_scale)) << 16 | uint32_t(to_e4m3(p.w, fp8_scale)) << 24;
        *reinterpret_cast<uint32_t*>(t.fp8 + i) = packed;
        amax_bits = max_bits(max_bits(amax_bits, magnitude_bits(p.x)), magnitude_bits(p.y));
        amax_bits = max_bits(max_bits(amax_bits, magnitude_bits(p.z)), magnitude_bits(p.w));
      }
    }
    scalar_begin = begin + 4 * quads;
  }
  for (int64_t i = scalar_begin + threadIdx.x; i < end; i += blockDim.x)
    adam_scalar(t, i, h, update, fp8_scale, amax_bits);
  if (t.fp8) {
    for (int offset = 16; offset > 0; offset /= 2)
      amax_bits = max_bits(amax_bits, __shfl_xor_sync(0xffffffffu, amax_bits, offset));
    if (threadIdx.x % 32 == 0) atomic_max_magnitude(t.fp8_amax, amax_bits);
  }
}

// Before the step raises them: each FP8 copy's amax from zero, and its scale inverse, as
// fp8_cast writes it.
__global__ void adam_fp8_prepare_kernel(const AdamTensor* __restrict__ tensors, int count) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    const AdamTensor& t = tensors[i];
    if (!t.fp8) continue;
    *t.fp8_amax = 0.0f;
    *t.fp8_scale_inv = 1.0f / *t.fp8_scale;
  }
}

}  // namespace

void adam_step(const void* metadata, size_t chunks_offset, int chunk_count, int tensors_count, int with_fp8,
               const AdamHyper& hyper, const KernelContext& ctx) {
  if (chunk_count == 0) return;
  const auto* tensors = static_cast<const AdamTensor*>(metadata);
  if (with_fp8 > 0) {
    adam_fp8_prepare_kernel<<<1, 128, 0, ctx.stream>>>(tensors, tensors_count);
    PTDP_LAUNCH_CHECK(adam_fp8_prepare_kernel);
  }
  const auto* chunks = reinterpret_cast<const ChunkRef*>(static_cast<const char*>(metadata) + chunks_offset);
  adam_kernel<<<static_cast<unsigned>(chunk_count), 256, 0, ctx.stream>>>(tensors, chunks, hyper);
  PTDP_LAUNCH_CHECK(adam_kernel);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
