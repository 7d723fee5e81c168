#pragma once
// One vector of the bias + dropout + residual add, for the kernels that apply it
// (bias_dropout_add.cu, and residual_layer_norm.cu before its LayerNorm): one body, so both give
// the same bits.
#include <cstdint>

#include "dropout.hpp"
#include "vec.cuh"

namespace ptdp::fused {

// out = residual + dropout(x + bias) for columns [col, col + VEC) of `row` ([rows, cols] bf16,
// bias fp32 [cols]). out may be x or residual: each element is read before it is written.
template <int VEC, bool DROPOUT>
__device__ __forceinline__ void bias_dropout_add_vector(const bf16* x, const float* __restrict__ bias,
                                                        const bf16* residual, bf16* out, int64_t row, int64_t col,
                                                        int64_t cols, const DropoutSite& dropout) {
  float v[VEC], b[VEC], r[VEC];
  load_vec<VEC>(x + row * cols + col, v);
  load_vec<VEC>(bias + col, b);
  load_vec<VEC>(residual + row * cols + col, r);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    float y = v[k] + b[k];
    if constexpr (DROPOUT) y *= dropout.factor(row, col + k);
    v[k] = r[k] + y;
  }
  store_vec<VEC>(out + row * cols + col, v);
}

}  // namespace ptdp::fused
