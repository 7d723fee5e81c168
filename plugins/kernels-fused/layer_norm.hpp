#pragma once
// LayerNorm over the last dimension, act_t activations with fp32 statistics and parameters.
#include <cstdint>

#include "fp8_cast.hpp"
#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// y = (x - mean) * rstd * gamma + beta per row of x: [rows, cols]. mean and rstd (fp32 [rows]) are
// written when not null, for backward. y must not be x. copy, when not null, receives x as read
// (a block keeps its input for backward so, without reading it twice). Rows of a multiple of 256
// columns, up to 4096, are held in registers while they are normalized.
void layer_norm_forward(const act_t* x, const float* gamma, const float* beta, act_t* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps, const KernelContext& ctx, act_t* copy = nullptr);

// LayerNorm's output as E4M3 under a given scale (the delayed recipe), written by the kernel that
// normalizes it in place of the act_t output (out), then transposed from those bytes (out_t,
// [cols, rows], may be null): the bytes fp8_cast makes of the act_t output; *scale_inv = 1 /
// *scale, and *record (may be null) raised to the output's amax.
struct LayerNormFp8Out {
  const float* scale = nullptr;
  fp8* out = nullptr;
  fp8* out_t = nullptr;
  float* scale_inv = nullptr;
  float* record = nullptr;
};

// Whether layer_norm_forward_fp8 (and bias_dropout_add_layer_norm_forward_fp8) take this shape:
// rows held in registers (layer_norm_forward's), and a multiple of 16 rows (the transpose's).
bool layer_norm_fp8_fits(int64_t rows, int64_t cols);

// layer_norm_forward with its output as E4M3 (LayerNormFp8Out) instead of act_t.
void layer_norm_forward_fp8(const act_t* x, const float* gamma, const float* beta, const LayerNormFp8Out& y,
                            float* mean, float* rstd, int64_t rows, int64_t cols, float eps, const KernelContext& ctx,
                            act_t* copy = nullptr);

// dx = residual_grad + LayerNorm'(dy); dgamma += sum over rows of dy * xhat, dbeta += sum of dy
// (fp32 accumulators), and residual_sum, when given with residual_grad, += the column sums of
// residual_grad (a bias gradient the residual path carries, summed where it is read anyway).
// residual_grad may be null; dx may be dy or residual_grad. With
// ctx.fused_layer_norm_backward, one cooperative launch reads x and dy once and sums the
// parameter gradients after a grid-wide barrier, where the device and the width allow it (up to
// 16384 columns, or 2048 when not a multiple of 8); else the column sums and the input gradient
// are separate launches. Both sum in a fixed order, so either repeats bit for bit.
void layer_norm_backward(const act_t* dy, const act_t* x, const float* gamma, const float* mean, const float* rstd,
                         const act_t* residual_grad, act_t* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, const KernelContext& ctx, float* residual_sum = nullptr);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
