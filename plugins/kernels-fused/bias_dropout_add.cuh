#pragma once
// One vector of the bias + dropout + residual add, for the kernels that apply it
// (bias_dropout_add.cu, and residual_layer_norm.cu before its LayerNorm): one body, so both give
// the same bits.
#include <cstdint>

#include "dropout.hpp"
#include "vec.cuh"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// v = residual + dropout(x + bias) for columns [col, col + VEC) of `row` ([rows, cols] bf16,
// bias fp32 [cols]), before it is rounded to bf16.
template <int VEC, bool DROPOUT>
__device__ __forceinline__ void bias_dropout_add_values(const act_t* x, const float* __restrict__ bias,
                                                        const act_t* residual, int64_t row, int64_t col, int64_t cols,
                                                        const DropoutSite& dropout, float (&v)[VEC]) {
  float b[VEC], r[VEC];
  load_vec<VEC>(x + row * cols + col, v);
  load_vec<VEC>(bias + col, b);
  load_vec<VEC>(residual + row * cols + col, r);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    float y = v[k] + b[k];
    if constexpr (DROPOUT) y *= dropout.factor(row, col + k);
    v[k] = r[k] + y;
  }
}

// The same, written to out. out may be x or residual: each element is read before it is written.
template <int VEC, bool DROPOUT>
__device__ __forceinline__ void bias_dropout_add_vector(const act_t* x, const float* __restrict__ bias,
                                                        const act_t* residual, act_t* out, int64_t row, int64_t col,
                                                        int64_t cols, const DropoutSite& dropout) {
  float v[VEC];
  bias_dropout_add_values<VEC, DROPOUT>(x, bias, residual, row, col, cols, dropout, v);
  store_vec<VEC>(out + row * cols + col, v);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
