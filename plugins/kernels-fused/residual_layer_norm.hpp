#pragma once
// The end of a block's attention half and the start of its MLP half in one kernel: the bias +
// dropout + residual add of bias_dropout_add.hpp, then LayerNorm of its output, each row
// normalized right after it is written, while it is still in cache. The unfused pair reads that
// output back from memory; this is the plugin option fused_residual_layer_norm.
#include <cstdint>

#include "dropout.hpp"
#include "kernel_context.hpp"
#include "layer_norm.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// out = residual + dropout(x + bias), then y = LayerNorm(out) with mean and rstd as
// layer_norm_forward writes them: the bits of bias_dropout_add_forward then layer_norm_forward.
// x, residual, out, y: act_t [rows, cols]; out may be x or residual, y is none of them. bias,
// gamma, beta: fp32 [cols].
void bias_dropout_add_layer_norm_forward(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                                         const float* gamma, const float* beta, act_t* y, float* mean, float* rstd,
                                         int64_t rows, int64_t cols, float eps, const DropoutSite& dropout,
                                         const KernelContext& ctx);

// The same with LayerNorm's output as E4M3 (layer_norm.hpp's LayerNormFp8Out) instead of act_t;
// the shapes layer_norm_fp8_fits takes.
void bias_dropout_add_layer_norm_forward_fp8(const act_t* x, const float* bias, const act_t* residual, act_t* out,
                                             const float* gamma, const float* beta, const LayerNormFp8Out& y,
                                             float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                             const DropoutSite& dropout, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
