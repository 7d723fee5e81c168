#pragma once
// LayerNorm over the last dimension (c) of n rows.
#include <cstdint>

namespace ptdp::kref {

// Saves each row's mean and reciprocal standard deviation for the backward.
void layer_norm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                        const float* bias, int64_t n, int64_t c, float eps);

// Accumulates: din += dL/din, dweight += ..., dbias += ... (din usually already holds the
// gradient that reached the same activation through the residual path).
void layer_norm_backward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                         const float* weight, const float* mean, const float* rstd, int64_t n, int64_t c);
// Its two parts: din += dL/din, and dweight += ..., dbias += ... (the same values, split).
void layer_norm_backward_input(float* din, const float* dout, const float* in, const float* weight, const float* mean,
                               const float* rstd, int64_t n, int64_t c);
void layer_norm_backward_weight(float* dweight, float* dbias, const float* dout, const float* in, const float* mean,
                                const float* rstd, int64_t n, int64_t c);

}  // namespace ptdp::kref
