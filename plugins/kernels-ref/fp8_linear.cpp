#include "fp8_linear.hpp"

#include <cblas.h>

#include "fp8_format.hpp"
#include "linear.hpp"

namespace ptdp::kref {

namespace {

// The factor that undoes both operands' scales, taken in double so that it rounds once.
float unscale(const Fp8Cast& a, const Fp8Cast& b) {
  return static_cast<float>(1.0 / (static_cast<double>(a.scale) * static_cast<double>(b.scale)));
}

}  // namespace

Fp8Cast fp8_cast_with_scale(const float* x, int64_t n, Fp8Operand operand, float scale) {
  Fp8Cast cast;
  cast.scale = scale;
  cast.values.resize(static_cast<size_t>(n));
  cast_to_fp8(cast.values.data(), x, n, scale, format_of(operand));
  return cast;
}

Fp8Cast fp8_cast(const float* x, int64_t n, Fp8Operand operand, bool sharded, const Fp8LinearScaling& scaling,
                 const Partition& part, bool training) {
  const int column = static_cast<int>(operand);
  float scale;
  float amax;
  if (part.fp8.scaling == Fp8Scaling::Tensorwise) {
    amax = amax_of(x, n);
    if (sharded) part.all_reduce(&amax, 1, ReduceOp::Max);
    scale = fp8_scale(amax, fp8_operand_max(operand), part.fp8.margin);
  } else {
    // The core reduces the recorded amaxes over the tensor- and data-parallel groups itself.
    amax = training ? amax_of(x, n) : 0.0f;
    scale = scaling.scale[column];
  }
  if (training) scaling.amax[column] = amax_update(scaling.amax[column], amax);
  return fp8_cast_with_scale(x, n, operand, scale);
}

void fp8_linear_forward(float* out, const Fp8Cast& in, const Fp8Cast& weight, const float* bias, int64_t n,
                        int64_t in_dim, int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_dim, in_dim, unscale(in, weight), in.values.data(),
              in_dim, weight.values.data(), in_dim, 0.0f, out, out_dim);
  if (bias != nullptr) add_bias(out, bias, n, out_dim);
}

void fp8_linear_backward(float* din, float* dweight, float* dbias, const float* dout, const Fp8Cast& dout_fp8,
                         const Fp8Cast& in, const Fp8Cast& weight, int64_t n, int64_t in_dim, int64_t out_dim) {
  if (din != nullptr) fp8_linear_backward_input(din, dout_fp8, weight, n, in_dim, out_dim);
  fp8_linear_backward_weight(dweight, dbias, dout, dout_fp8, in, n, in_dim, out_dim);
}

void fp8_linear_backward_input(float* din, const Fp8Cast& dout_fp8, const Fp8Cast& weight, int64_t n, int64_t in_dim,
                               int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in_dim, out_dim, unscale(dout_fp8, weight),
              dout_fp8.values.data(), out_dim, weight.values.data(), in_dim, 0.0f, din, in_dim);
}

void fp8_linear_backward_weight(float* dweight, float* dbias, const float* dout, const Fp8Cast& dout_fp8,
                                const Fp8Cast& in, int64_t n, int64_t in_dim, int64_t out_dim) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_dim, in_dim, n, unscale(dout_fp8, in),
              dout_fp8.values.data(), out_dim, in.values.data(), in_dim, 1.0f, dweight, in_dim);
  if (dbias != nullptr) add_bias_gradient(dbias, dout, n, out_dim);
}

}  // namespace ptdp::kref
