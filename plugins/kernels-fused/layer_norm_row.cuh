#pragma once
// LayerNorm of one row by one warp: the forward of layer_norm.cu, and of residual_layer_norm.cu
// once it has written the row. One body for both, so that both give the same bits.
#include <cstdint>

#include "vec.cuh"

namespace ptdp::fused {

constexpr int kLayerNormWarpsPerBlock = 8;

struct RowStats {
  float mean, rstd;
};

// y = (x - mean) * rstd * gamma + beta over one row, by the 32 lanes of a warp. The row is read
// three times; after the first pass it comes from cache.
template <int VEC>
__device__ __forceinline__ RowStats layer_norm_row(const bf16* __restrict__ xr, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, bf16* __restrict__ yr,
                                                   int64_t cols, float eps, int lane) {
  float sum = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC];
    load_vec<VEC>(xr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sum += v[k];
  }
  const float mean = warp_sum(sum) / float(cols);
  float sq = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC];
    load_vec<VEC>(xr + c, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) sq += (v[k] - mean) * (v[k] - mean);
  }
  const float rstd = rsqrtf(warp_sum(sq) / float(cols) + eps);
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC], g[VEC], b[VEC];
    load_vec<VEC>(xr + c, v);
    load_vec<VEC>(gamma + c, g);
    load_vec<VEC>(beta + c, b);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = (v[k] - mean) * rstd * g[k] + b[k];
    store_vec<VEC>(yr + c, v);
  }
  return {mean, rstd};
}

}  // namespace ptdp::fused
