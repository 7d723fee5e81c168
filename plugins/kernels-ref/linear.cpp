#include "linear.hpp"

#include <cblas.h>

namespace ptdp::kref {

void add_bias(float* x, const float* bias, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) x[i * c + j] += bias[j];
}

void add_bias_gradient(float* dbias, const float* dout, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) dbias[j] += dout[i * c + j];
}

void linear_forward(float* out, const float* in, const float* weight, const float* bias, int64_t n,
                    int64_t in_dim, int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_dim, in_dim, 1.0f, in, in_dim, weight,
              in_dim, 0.0f, out, out_dim);
  if (bias != nullptr) add_bias(out, bias, n, out_dim);
}

void linear_backward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                     const float* weight, int64_t n, int64_t in_dim, int64_t out_dim) {
  if (din != nullptr) linear_backward_input(din, dout, weight, n, in_dim, out_dim);
  linear_backward_weight(dweight, dbias, dout, in, n, in_dim, out_dim);
}

void linear_backward_input(float* din, const float* dout, const float* weight, int64_t n, int64_t in_dim,
                           int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_dim, out_dim, 1.0f, dout, out_dim, weight, in_dim,
              0.0f, din, in_dim);
}

void linear_backward_weight(float* dweight, float* dbias, const float* dout, const float* in, int64_t n,
                            int64_t in_dim, int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_dim, in_dim, n, 1.0f, dout, out_dim, in, in_dim, 1.0f,
              dweight, in_dim);
  if (dbias != nullptr) add_bias_gradient(dbias, dout, n, out_dim);
}

}  // namespace ptdp::kref
