#pragma once
// The paper's fused bias + dropout + residual add, at the end of the attention and MLP halves of a
// block (after the row-parallel GEMM's all-reduce). Dropout masks come from counter_rng.hpp, so
// backward redraws them instead of reading a stored mask.
#include <cstdint>

#include "dropout.hpp"
#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// out = residual + dropout(x + bias). x, residual, out: [rows, cols] act_t with rows ordered
// (position, sample); out may be x or residual. bias: fp32 [cols].
void bias_dropout_add_forward(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                              int64_t rows, int64_t cols, const DropoutSite& dropout, const KernelContext& ctx);

// dx = dropout'(dout) (the gradient of x + bias), dbias += column sums of dx (may be null). The
// residual's gradient is dout itself. dx may be dout.
void bias_dropout_add_backward(const act_t* dout, act_t* dx, float* dbias, int64_t rows, int64_t cols,
                               const DropoutSite& dropout, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
