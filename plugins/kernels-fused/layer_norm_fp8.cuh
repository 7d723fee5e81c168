#pragma once
// LayerNorm's output cast to E4M3 by the kernel that normalizes it (layer_norm.cu and
// residual_layer_norm.cu, under the delayed recipe, whose scale is known before the values are):
// each value is rounded to act_t first, as if stored and read back, so the bytes, the amax and the
// scale inverse are those of fp8_cast on the act_t output, and LayerNorm's act_t output is
// neither written nor read back. The transpose a weight gradient reads is made from the FP8
// bytes afterwards (fp8_transpose: one byte read an element, where a cast reads two).
#include <cstdint>

#include "fp8_amax.cuh"
#include "layer_norm.hpp"
#include "layer_norm_row.cuh"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// A held row's values as E4M3 bytes under `scale` into the row of the output; *bits raised to
// their amax (float bits, fp8_amax.cuh).
struct Fp8RowStore {
  fp8* out;
  float scale;
  int* bits;
  __device__ __forceinline__ void operator()(int64_t c, const float (&v)[8]) const {
    uint2 packed;
    fp8* q = reinterpret_cast<fp8*>(&packed);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float stored = to_float(to_act(v[k]));
      *bits = max_bits(*bits, magnitude_bits(stored));
      q[k] = __nv_cvt_float_to_fp8(stored * scale, __NV_SATFINITE, __NV_E4M3);
    }
    *reinterpret_cast<uint2*>(out + c) = packed;
  }
};

// What a held-row kernel writes under FP8 (layer_norm_row.cuh's ActRows' counterpart): y.out, the
// warp's amax into *y.record, and by row 0 the scale inverse.
struct Fp8Rows {
  LayerNormFp8Out y;
  template <int N>
  __device__ __forceinline__ RowStats normalize(const HeldRow<N>& row, int64_t r, const float* __restrict__ gamma,
                                                const float* __restrict__ beta, float eps, int lane) const {
    constexpr int64_t cols = 256 * N;
    const float scale = *y.scale;
    int bits = 0;
    const RowStats stats =
        layer_norm_held_row<N>(row, gamma, beta, Fp8RowStore{y.out + r * cols, scale, &bits}, cols, eps, lane);
    if (y.record) {
      for (int offset = 16; offset > 0; offset /= 2) bits = max_bits(bits, __shfl_xor_sync(0xffffffffu, bits, offset));
      if (lane == 0) atomic_max_magnitude(y.record, bits);
    }
    if (r == 0 && lane == 0) *y.scale_inv = 1.0f / scale;
    return stats;
  }
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
