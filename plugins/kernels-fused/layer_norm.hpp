#pragma once
// LayerNorm over the last dimension, bf16 activations with fp32 statistics and parameters.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {

// y = (x - mean) * rstd * gamma + beta per row of x: [rows, cols]. mean and rstd (fp32 [rows]) are
// written when not null, for backward. y must not be x.
void layer_norm_forward(const bf16* x, const float* gamma, const float* beta, bf16* y, float* mean, float* rstd,
                        int64_t rows, int64_t cols, float eps, const KernelContext& ctx);

// dx = residual_grad + LayerNorm'(dy); dgamma += sum over rows of dy * xhat, dbeta += sum of dy
// (fp32 accumulators). residual_grad may be null; dx may be dy or residual_grad.
void layer_norm_backward(const bf16* dy, const bf16* x, const float* gamma, const float* mean, const float* rstd,
                         const bf16* residual_grad, bf16* dx, float* dgamma, float* dbeta, int64_t rows,
                         int64_t cols, const KernelContext& ctx);

}  // namespace ptdp::fused
