#pragma once
// LayerNorm of one row by one warp: the forward of layer_norm.cu, and of residual_layer_norm.cu
// once it has written the row. One body for both, so that both give the same bits.
#include <cstdint>
#include <type_traits>

#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

constexpr int kLayerNormWarpsPerBlock = 8;

struct RowStats {
  float mean, rstd;
};

// A row's statistics, for backward, by the row's first lane (either pointer may be null).
__device__ __forceinline__ void store_row_stats(const RowStats& stats, int64_t r, int lane, float* mean_out,
                                                float* rstd_out) {
  if (lane != 0) return;
  if (mean_out) mean_out[r] = stats.mean;
  if (rstd_out) rstd_out[r] = stats.rstd;
}

// The widest row a warp holds in registers: 16 vectors of 8 bf16 per lane (4096 columns, 64
// registers). Wider rows, and rows that are not a multiple of 256 columns, are read in a loop.
constexpr int kMaxHeldRowVectors = 16;

// How many 16-byte vectors each lane holds of a row of `cols` bf16, or 0 when the row is not
// held in registers.
inline int held_row_vectors(int64_t cols) {
  return cols % 256 == 0 && cols / 256 <= kMaxHeldRowVectors ? int(cols / 256) : 0;
}

// A row as its lanes hold it: lane l has columns 8l + 256i .. +7 in raw[i], the order in which
// the loop of layer_norm_row visits them, so both sum in the same order and give the same bits.
template <int N>
struct HeldRow {
  uint4 raw[N];
};

// Where a held row's normalized values go: act_t, stored (y's row).
struct ActRowStore {
  act_t* __restrict__ yr;
  __device__ __forceinline__ void operator()(int64_t c, const float (&v)[8]) const { store_vec<8>(yr + c, v); }
};

// y = (x - mean) * rstd * gamma + beta over a held row, each 8 values of y given to store(c, v)
// (ActRowStore, or layer_norm_fp8.cuh's FP8 one). It was read once; the three passes run over
// registers, so the warp keeps all its loads in flight at once.
template <int N, class Store>
__device__ __forceinline__ RowStats layer_norm_held_row(const HeldRow<N>& row, const float* __restrict__ gamma,
                                                        const float* __restrict__ beta, const Store& store,
                                                        int64_t cols, float eps, int lane) {
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float v[8];
    unpack_act8(row.raw[i], v);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += v[k];
  }
  const float mean = warp_sum(sum) / float(cols);
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float v[8];
    unpack_act8(row.raw[i], v);
#pragma unroll
    for (int k = 0; k < 8; ++k) sq += (v[k] - mean) * (v[k] - mean);
  }
  const float rstd = rsqrtf(warp_sum(sq) / float(cols) + eps);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int64_t c = int64_t(lane) * 8 + int64_t(i) * 256;
    float v[8], g[8], b[8];
    unpack_act8(row.raw[i], v);
    load_vec<8>(gamma + c, g);
    load_vec<8>(beta + c, b);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = (v[k] - mean) * rstd * g[k] + b[k];
    store(c, v);
  }
  return {mean, rstd};
}

// What a held-row kernel (layer_norm.cu, residual_layer_norm.cu) writes: the act_t output y. The
// kernels take this or layer_norm_fp8.cuh's Fp8Rows, whose normalize() has the same form.
struct ActRows {
  act_t* y;
  template <int N>
  __device__ __forceinline__ RowStats normalize(const HeldRow<N>& row, int64_t r, const float* __restrict__ gamma,
                                                const float* __restrict__ beta, float eps, int lane) const {
    constexpr int64_t cols = 256 * N;
    return layer_norm_held_row<N>(row, gamma, beta, ActRowStore{y + r * cols}, cols, eps, lane);
  }
};

// The same over a row of any width, read three times; after the first pass it comes from cache.
// copy, when not null, receives the row as read.
template <int VEC>
__device__ __forceinline__ RowStats layer_norm_row(const act_t* __restrict__ xr, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, act_t* __restrict__ yr,
                                                   act_t* __restrict__ copy, int64_t cols, float eps, int lane) {
  float sum = 0.0f;
  for (int64_t c = int64_t(lane) * VEC; c < cols; c += 32 * VEC) {
    float v[VEC];
    load_vec<VEC>(xr + c, v);
    if (copy) store_vec<VEC>(copy + c, v);  // bf16 -> float -> bf16 is exact
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

// Calls body(std::integral_constant<int, N>{}) for the held width N of `cols`
// (1..kMaxHeldRowVectors); false when the row is not held.
template <int N = 1, typename Body>
bool dispatch_held_row(int64_t cols, Body&& body) {
  if constexpr (N > kMaxHeldRowVectors) {
    return false;
  } else {
    if (held_row_vectors(cols) != N) return dispatch_held_row<N + 1>(cols, body);
    body(std::integral_constant<int, N>{});
    return true;
  }
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
