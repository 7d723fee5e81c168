#pragma once
// A linear layer on FP8 operands (the hybrid recipe of ptdp/fp8.hpp), emulated in fp32: each
// operand scaled and rounded to its format, the GEMM in fp32 on the rounded values (their
// products are exact in fp32, so only the accumulation rounds, as on the GPU), the product
// divided by the two scales. Biases and their gradients stay in fp32.
#include <cstdint>
#include <vector>

#include <ptdp/fp8.hpp>

#include "partition.hpp"

namespace ptdp::kref {

// One linear layer's row of its block's scaling tensors.
struct Fp8LinearScaling {
  float* amax = nullptr;         // [kFp8Operands]: raised to each operand's amax while training
  const float* scale = nullptr;  // [kFp8Operands]: the delayed recipe's scales
};

// An operand as the GEMM reads it: round_to_fp8(x * scale), and that scale.
struct Fp8Cast {
  std::vector<float> values;
  float scale = 1.0f;
};

// Casts operand `operand` of a linear layer (n values at x). Its scale is the delayed recipe's,
// or under tensorwise scaling comes from its amax, taken over the tensor-parallel group when the
// operand is `sharded` over it. While `training` its amax is recorded in `scaling`.
Fp8Cast fp8_cast(const float* x, int64_t n, Fp8Operand operand, bool sharded, const Fp8LinearScaling& scaling,
                 const Partition& part, bool training);
// The same cast with a scale already chosen (the backward casting a saved forward input again).
Fp8Cast fp8_cast_with_scale(const float* x, int64_t n, Fp8Operand operand, float scale);

// out[n, out_dim] = in · weightᵀ / (in.scale · weight.scale) (+ bias[out_dim] when non-null).
void fp8_linear_forward(float* out, const Fp8Cast& in, const Fp8Cast& weight, const float* bias, int64_t n,
                        int64_t in_dim, int64_t out_dim);

// din = dout_fp8 · weight / (scales) when non-null (overwritten); dweight += dout_fp8ᵀ · in /
// (scales); dbias += column sums of the unrounded dout (when non-null).
void fp8_linear_backward(float* din, float* dweight, float* dbias, const float* dout, const Fp8Cast& dout_fp8,
                         const Fp8Cast& in, const Fp8Cast& weight, int64_t n, int64_t in_dim, int64_t out_dim);
// Its two parts: din (overwritten), and dweight and dbias (when non-null).
void fp8_linear_backward_input(float* din, const Fp8Cast& dout_fp8, const Fp8Cast& weight, int64_t n, int64_t in_dim,
                               int64_t out_dim);
void fp8_linear_backward_weight(float* dweight, float* dbias, const float* dout, const Fp8Cast& dout_fp8,
                                const Fp8Cast& in, int64_t n, int64_t in_dim, int64_t out_dim);

}  // namespace ptdp::kref
