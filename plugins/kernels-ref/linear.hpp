#pragma once
// y = x W^T + b with W stored [out, in] as in torch.nn.Linear, over n rows. GEMMs go through
// cblas (OpenBLAS).
#include <cstdint>

namespace ptdp::kref {

// out[n, out_dim] = in[n, in_dim] * weight[out_dim, in_dim]^T (+ bias[out_dim] when non-null).
void linear_forward(float* out, const float* in, const float* weight, const float* bias, int64_t n,
                    int64_t in_dim, int64_t out_dim);

// dweight += dout^T in; dbias += column sums of dout (when non-null); din = dout weight (when
// non-null; overwritten): linear_backward_input, then linear_backward_weight.
void linear_backward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                     const float* weight, int64_t n, int64_t in_dim, int64_t out_dim);
// din = dout weight (overwritten).
void linear_backward_input(float* din, const float* dout, const float* weight, int64_t n, int64_t in_dim,
                           int64_t out_dim);
// dweight += dout^T in; dbias += column sums of dout (when non-null).
void linear_backward_weight(float* dweight, float* dbias, const float* dout, const float* in, int64_t n,
                            int64_t in_dim, int64_t out_dim);

// dbias[c] += column sums of dout[n, c]
void add_bias_gradient(float* dbias, const float* dout, int64_t n, int64_t c);

// x[n, c] += bias[c]
void add_bias(float* x, const float* bias, int64_t n, int64_t c);

}  // namespace ptdp::kref
