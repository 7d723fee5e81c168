#pragma once
// The paper's fused bias + GeLU (tanh form, as GPT-2), forward and backward, over the [tokens,
// ffn] output of the first MLP GEMM. The sum x + bias is never stored: backward recomputes it.
#include <cstdint>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// y = gelu(x + bias). x, y: [rows, cols] act_t (y may be x); bias: fp32 [cols], or null when x
// has it already (a GELU_AUX_BIAS epilogue's aux).
void bias_gelu_forward(const act_t* x, const float* bias, act_t* y, int64_t rows, int64_t cols,
                       const KernelContext& ctx);

// dx = dy * gelu'(x + bias), and dbias += column sums of dx (fp32 accumulator, may be null).
// dx may be dy. bias may be null: x is then the sum already (a GELU_AUX_BIAS epilogue's aux).
void bias_gelu_backward(const act_t* dy, const act_t* x, const float* bias, act_t* dx, float* dbias,
                        int64_t rows, int64_t cols, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
