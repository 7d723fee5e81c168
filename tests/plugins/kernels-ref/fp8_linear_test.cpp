// kernels-ref's FP8 linear layer against an fp64 reference: on operands the formats hold exactly
// it differs by the fp32 accumulation's rounding alone; on random operands by no more than the
// formats' rounding allows. And the casts record amaxes and take scales as the recipe says.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "fp8_format.hpp"
#include "fp8_linear.hpp"

namespace ptdp::test {
namespace {

using kref::Fp8Cast;
using kref::Fp8LinearScaling;

constexpr int64_t kN = 24, kIn = 40, kOut = 16;

// out[i, o] = sum_k a[i, k] * b[o, k] in double.
std::vector<double> gemm_nt(const std::vector<float>& a, const std::vector<float>& b, int64_t n, int64_t k, int64_t m) {
  std::vector<double> out(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t j = 0; j < k; ++j) out[i * m + o] += double{a[i * k + j]} * b[o * k + j];
  return out;
}

std::vector<float> transpose(const std::vector<float>& a, int64_t rows, int64_t cols) {
  std::vector<float> t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  return t;
}

// Random values of the format's grid (times 2^-3, so sums of products stay in range).
std::vector<float> grid_values(int64_t count, const kref::Fp8Format& format, std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255);
  std::vector<float> v;
  while (static_cast<int64_t>(v.size()) < count) {
    const float x = kref::fp8_code_value(static_cast<uint8_t>(code(rng)), format);
    if (std::isfinite(x) && std::fabs(x) <= 16.0f) v.push_back(x);
  }
  return v;
}

std::vector<float> normal_values(int64_t count, float sigma, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = d(rng);
  return v;
}

// The largest error of an operand rounded under `scale` and scaled back: half a spacing of the
// format at |x|, and half the smallest subnormal spacing below the normals.
double rounding_bound(float x, float scale, const kref::Fp8Format& format) {
  const double relative = std::ldexp(1.0, -(format.mantissa_bits + 1));
  const double subnormal = std::ldexp(1.0, format.min_normal_exponent - format.mantissa_bits - 1) / scale;
  return std::max(relative * std::fabs(x), subnormal);
}

TEST(KernelsRefFp8Linear, OnValuesTheFormatsHoldOnlyTheAccumulationRounds) {
  std::mt19937 rng(7);
  const std::vector<float> x = grid_values(kN * kIn, kref::kE4M3, rng);
  const std::vector<float> w = grid_values(kOut * kIn, kref::kE4M3, rng);
  const std::vector<float> dy = grid_values(kN * kOut, kref::kE5M2, rng);
  const Fp8Cast qx = kref::fp8_cast_with_scale(x.data(), kN * kIn, Fp8Operand::Input, 1.0f);
  const Fp8Cast qw = kref::fp8_cast_with_scale(w.data(), kOut * kIn, Fp8Operand::Weight, 1.0f);
  const Fp8Cast qdy = kref::fp8_cast_with_scale(dy.data(), kN * kOut, Fp8Operand::OutputGradient, 1.0f);
  EXPECT_EQ(qx.values, x);
  EXPECT_EQ(qdy.values, dy);

  std::vector<float> y(kN * kOut), dx(kN * kIn), dw(kOut * kIn, 0.0f);
  kref::fp8_linear_forward(y.data(), qx, qw, nullptr, kN, kIn, kOut);
  kref::fp8_linear_backward(dx.data(), dw.data(), nullptr, dy.data(), qdy, qx, qw, kN, kIn, kOut);
  // Each output sums K products of values below 16 * 16; fp32 accumulation errs by at most
  // K * 2^-24 of the sum of their magnitudes.
  auto check = [](const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                  int64_t k, const char* what) {
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::fabs(got[i] - want[i]), k * std::ldexp(1.0, -24) * magnitude[i] + 1e-30) << what << " " << i;
  };
  auto abs_of = [](std::vector<float> v) {
    for (float& f : v) f = std::fabs(f);
    return v;
  };
  check(y, gemm_nt(x, w, kN, kIn, kOut), gemm_nt(abs_of(x), abs_of(w), kN, kIn, kOut), kIn, "forward");
  check(dx, gemm_nt(dy, transpose(w, kOut, kIn), kN, kOut, kIn),
        gemm_nt(abs_of(dy), transpose(abs_of(w), kOut, kIn), kN, kOut, kIn), kOut, "input gradient");
  check(dw, gemm_nt(transpose(dy, kN, kOut), transpose(x, kN, kIn), kOut, kN, kIn),
        gemm_nt(transpose(abs_of(dy), kN, kOut), transpose(abs_of(x), kN, kIn), kOut, kN, kIn), kN, "weight gradient");
}

TEST(KernelsRefFp8Linear, OnRandomValuesTheErrorIsWithinTheFormatsRounding) {
  std::mt19937 rng(11);
  kref::Partition part;
  part.fp8.enabled = true;  // tensorwise scaling, one rank
  std::vector<float> amax(kFp8Operands, 0.0f), scale(kFp8Operands, 1.0f);
  const Fp8LinearScaling scaling{amax.data(), scale.data()};
  const std::vector<float> x = normal_values(kN * kIn, 1.0f, rng);
  const std::vector<float> w = normal_values(kOut * kIn, 0.02f, rng);
  const std::vector<float> dy = normal_values(kN * kOut, 1e-4f, rng);
  const Fp8Cast qx = kref::fp8_cast(x.data(), kN * kIn, Fp8Operand::Input, false, scaling, part, true);
  const Fp8Cast qw = kref::fp8_cast(w.data(), kOut * kIn, Fp8Operand::Weight, true, scaling, part, true);
  const Fp8Cast qdy = kref::fp8_cast(dy.data(), kN * kOut, Fp8Operand::OutputGradient, false, scaling, part, true);
  // Tensorwise: the amax recorded, the scale mapping it to the format's largest value.
  EXPECT_EQ(amax[0], kref::amax_of(x.data(), kN * kIn));
  EXPECT_EQ(amax[2], kref::amax_of(dy.data(), kN * kOut));
  EXPECT_EQ(qx.scale, fp8_scale(amax[0], kE4M3Max, 0));
  EXPECT_EQ(qdy.scale, fp8_scale(amax[2], kE5M2Max, 0));

  std::vector<float> y(kN * kOut), dx(kN * kIn), dw(kOut * kIn, 0.0f), db(kOut, 0.0f);
  kref::fp8_linear_forward(y.data(), qx, qw, nullptr, kN, kIn, kOut);
  kref::fp8_linear_backward(dx.data(), dw.data(), db.data(), dy.data(), qdy, qx, qw, kN, kIn, kOut);
  // |a·b − â·b̂| ≤ Σ |a|·eb + |b|·ea + ea·eb, with each operand's own rounding bound, plus the
  // accumulation's rounding.
  auto bound = [](const std::vector<float>& a, float sa, const kref::Fp8Format& fa, const std::vector<float>& b,
                  float sb, const kref::Fp8Format& fb, int64_t ia, int64_t ib, int64_t k, int64_t sa_k, int64_t sb_k) {
    double total = 0;
    for (int64_t j = 0; j < k; ++j) {
      const float av = a[ia + j * sa_k], bv = b[ib + j * sb_k];
      const double ea = rounding_bound(av, sa, fa), eb = rounding_bound(bv, sb, fb);
      total += std::fabs(av) * eb + std::fabs(bv) * ea + ea * eb + k * std::ldexp(1.0, -23) * std::fabs(av * bv);
    }
    return total;
  };
  const auto y_ref = gemm_nt(x, w, kN, kIn, kOut);
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t o = 0; o < kOut; ++o)
      ASSERT_LE(std::fabs(y[i * kOut + o] - y_ref[i * kOut + o]),
                bound(x, qx.scale, kref::kE4M3, w, qw.scale, kref::kE4M3, i * kIn, o * kIn, kIn, 1, 1))
          << "forward " << i << "," << o;
  const auto dx_ref = gemm_nt(dy, transpose(w, kOut, kIn), kN, kOut, kIn);
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t c = 0; c < kIn; ++c)
      ASSERT_LE(std::fabs(dx[i * kIn + c] - dx_ref[i * kIn + c]),
                bound(dy, qdy.scale, kref::kE5M2, w, qw.scale, kref::kE4M3, i * kOut, c, kOut, 1, kIn))
          << "input gradient " << i << "," << c;
  const auto dw_ref = gemm_nt(transpose(dy, kN, kOut), transpose(x, kN, kIn), kOut, kN, kIn);
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t c = 0; c < kIn; ++c)
      ASSERT_LE(std::fabs(dw[o * kIn + c] - dw_ref[o * kIn + c]),
                bound(dy, qdy.scale, kref::kE5M2, x, qx.scale, kref::kE4M3, o, c, kN, kOut, kIn))
          << "weight gradient " << o << "," << c;
  // The bias gradient sums the unrounded output gradient.
  for (int64_t o = 0; o < kOut; ++o) {
    double sum = 0;
    for (int64_t i = 0; i < kN; ++i) sum += dy[i * kOut + o];
    EXPECT_NEAR(db[o], sum, 1e-9);
  }
}

TEST(KernelsRefFp8Linear, DelayedScalingMultipliesByTheGivenScaleAndRecordsOnlyWhileTraining) {
  kref::Partition part;
  part.fp8.enabled = true;
  part.fp8.scaling = Fp8Scaling::Delayed;
  std::vector<float> amax(kFp8Operands, 0.0f), scale = {4.0f, 2.0f, 1024.0f};
  const Fp8LinearScaling scaling{amax.data(), scale.data()};
  const std::vector<float> x = {0.5f, -3.0f, 100.0f, 1.0f / 3.0f};
  const Fp8Cast eval = kref::fp8_cast(x.data(), 4, Fp8Operand::Input, false, scaling, part, false);
  EXPECT_EQ(amax[0], 0.0f) << "evaluation records no amax";
  EXPECT_EQ(eval.scale, 4.0f);
  // 400 lies halfway between 384 and 416 (spacing 32 above 256) and goes to the even code, 384.
  EXPECT_EQ(eval.values, (std::vector<float>{2.0f, -12.0f, 384.0f, 1.375f}));
  kref::fp8_cast(x.data(), 4, Fp8Operand::Input, false, scaling, part, true);
  EXPECT_EQ(amax[0], 100.0f);
}

}  // namespace
}  // namespace ptdp::test
