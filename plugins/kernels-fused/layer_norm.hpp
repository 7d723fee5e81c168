#pragma once
// LayerNorm over the last dimension, act_t activations with fp32 statistics and parameters.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// y = (x - mean) * rstd * gamma + beta per row of x: [rows, cols]. mean and rstd (fp32 [rows]) are
// written when not null, for backward. y must not be x. copy, when not null, receives x as read
// (a block keeps its input for backward so, without reading it twice). Rows of a multiple of 256
// columns, up to 4096, are held in registers while they are normalized.
void layer_norm_forward(const act_t* x, const float* gamma, const float* beta, act_t* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps, const KernelContext& ctx, act_t* copy = nullptr);

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
