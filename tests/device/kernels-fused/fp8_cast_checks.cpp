// The FP8 casts: fp8_cast of act_t and of fp32 against the conversion done on the host (cuda_fp8.h's
// own, under ptdp::fp8_scale's scale), both layouts byte for byte; the casts that compute their
// values (fp8_cast_gelu, the delayed recipe's GeLU) against the kernels they stand for: bias + GeLU
// (forward or backward) storing act_t, then fp8_cast of what was stored. The FP8 bytes, both
// layouts, the amax found and the scale inverse must be the same bits; the bias gradient, summed
// in another order, the same within fp32 rounding. LayerNorm writing FP8 against LayerNorm then
// fp8_cast, likewise; and fp8_transpose against the host's transpose.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ptdp/fp8.hpp"

#include "bias_gelu.hpp"
#include "device_check_registry.hpp"
#include "device_checks.hpp"
#include "fp8_cast.hpp"
#include "fp8_transpose.hpp"
#include "layer_norm.hpp"
#include "random_dropout_site.hpp"
#include "residual_layer_norm.hpp"

namespace ptdp::fused::test {
namespace {

constexpr double kFp32Sum = 1e-5;  // the same fp32 terms summed in another order

struct CastResult {
  std::vector<uint8_t> out, out_t;
  std::vector<float> scale_inv, amax;
};

CastResult read(const DeviceArray<uint8_t>& out, const DeviceArray<uint8_t>& out_t, const DeviceArray<float>& scale_inv,
                const DeviceArray<float>& amax) {
  return CastResult{out.download(), out_t.download(), scale_inv.download(), amax.download()};
}

void compare(Checks& checks, const std::string& name, const CastResult& got, const CastResult& want) {
  const auto differing = [](const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
    return n;
  };
  const size_t plain = differing(got.out, want.out), transposed = differing(got.out_t, want.out_t);
  checks.record(name + " bytes", plain == 0 && transposed == 0,
                std::to_string(plain) + " and " + std::to_string(transposed) + " of " + std::to_string(got.out.size()) +
                    " bytes differ (as stored, transposed)");
  checks.record(name + " amax and scale inverse", got.amax == want.amax && got.scale_inv == want.scale_inv,
                "amax " + std::to_string(got.amax[0]) + " (unfused " + std::to_string(want.amax[0]) + "), scale inverse " +
                    std::to_string(got.scale_inv[0]) + " (unfused " + std::to_string(want.scale_inv[0]) + ")");
}

// fp8_cast of a [rows, cols] matrix of act_t (fp32 false) or fp32 under a given scale (delayed)
// or one from its amax (tensorwise, margin 1), against the host's conversion of the same values.
void check_plain_cast(Checks& checks, int64_t rows, int64_t cols, Fp8Kind kind, bool fp32, bool delayed, TestDevice& dev) {
  const std::string name = std::string("cast ") + (fp32 ? "fp32 " : "act_t ") + shape_name({rows, cols}) +
                           (kind == Fp8Kind::E4M3 ? " E4M3" : " E5M2") + (delayed ? " given scale" : " from amax");
  const size_t n = size_t(rows * cols);
  // Values past the format's range once scaled, so that saturation is exercised too.
  std::vector<float> x = fp32 ? random_values(n, -3.0f, 3.0f) : random_bf16_values(n, -3.0f, 3.0f);
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  const float format_max = kind == Fp8Kind::E4M3 ? kE4M3Max : kE5M2Max;
  const int margin = 1;
  const float scale = delayed ? 2.0f * format_max / amax : fp8_scale(amax, format_max, margin);
  DeviceArray<uint16_t> d_x16(fp32 ? std::vector<uint16_t>(1) : to_bf16(x));
  DeviceArray<float> d_x32(fp32 ? x : std::vector<float>(1)), d_amax(std::vector<float>{amax}),
      d_scale(std::vector<float>{scale}), got_scale_inv(1), got_record(std::vector<float>{0.0f});
  DeviceArray<uint8_t> got_out(n), got_t(n);
  got_out.poison(), got_t.poison();
  Fp8ScaleSource source;
  if (delayed) source.scale = d_scale.get();
  else source.amax = d_amax.get(), source.margin = margin;
  if (fp32)
    fp8_cast(d_x32.get(), rows, cols, kind, source, got_out.get(), got_t.get(), got_scale_inv.get(), got_record.get(),
             dev.ctx);
  else
    fp8_cast(bf(d_x16), rows, cols, kind, source, got_out.get(), got_t.get(), got_scale_inv.get(), got_record.get(),
             dev.ctx);
  CastResult want{std::vector<uint8_t>(n), std::vector<uint8_t>(n), {1.0f / scale}, {amax}};
  const __nv_fp8_interpretation_t format = kind == Fp8Kind::E4M3 ? __NV_E4M3 : __NV_E5M2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t byte = __nv_cvt_float_to_fp8(x[size_t(r * cols + c)] * scale, __NV_SATFINITE, format);
      want.out[size_t(r * cols + c)] = byte;
      want.out_t[size_t(c * rows + r)] = byte;
    }
  compare(checks, name, read(got_out, got_t, got_scale_inv, got_record), want);
}

// gradient false: FC2's input gelu(pre + bias) in E4M3; true: FC1's output gradient
// dy · gelu'(pre + bias) in E5M2 with the bias gradient. with_bias false: pre has the bias in it.
void check_gelu_cast(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols, bool gradient, bool with_bias) {
  const std::string name = std::string(gradient ? "GeLU input gradient" : "GeLU output") + " cast " +
                           shape_name({rows, cols}) + (with_bias ? "" : " (bias in pre)");
  const size_t n = size_t(rows * cols);
  const auto pre = random_bf16_values(n, -4.0f, 4.0f), dy = random_bf16_values(n, -0.5f, 0.5f);
  const auto bias = random_values(size_t(cols), -0.5f, 0.5f), dbias0 = random_values(size_t(cols));
  DeviceArray<uint16_t> d_pre(to_bf16(pre)), d_dy(to_bf16(dy)), d_values(n);
  DeviceArray<float> d_bias(bias), d_scale(std::vector<float>{gradient ? 4096.0f : 64.0f});
  const Fp8Kind kind = gradient ? Fp8Kind::E5M2 : Fp8Kind::E4M3;
  Fp8ScaleSource source;
  source.scale = d_scale.get();
  const float* bias_ptr = with_bias ? d_bias.get() : nullptr;

  // The unfused kernels: act_t values stored, then cast.
  DeviceArray<uint8_t> want_out(n), want_t(n);
  DeviceArray<float> want_scale_inv(1), want_amax(std::vector<float>{0.0f}), want_dbias(dbias0);
  if (gradient)
    bias_gelu_backward(bf(d_dy), bf(d_pre), bias_ptr, bf(d_values), want_dbias.get(), rows, cols, dev.ctx);
  else
    bias_gelu_forward(bf(d_pre), with_bias ? d_bias.get() : nullptr, bf(d_values), rows, cols, dev.ctx);
  fp8_cast(bf(d_values), rows, cols, kind, source, want_out.get(), want_t.get(), want_scale_inv.get(), want_amax.get(),
           dev.ctx);

  DeviceArray<uint8_t> got_out(n), got_t(n);
  DeviceArray<float> got_scale_inv(1), got_amax(std::vector<float>{0.0f}), got_dbias(dbias0);
  got_out.poison(), got_t.poison();
  Fp8GeluSource gelu;
  gelu.pre = bf(d_pre);
  gelu.bias = bias_ptr;
  if (gradient) gelu.dy = bf(d_dy);
  fp8_cast_gelu(gelu, rows, cols, kind, source, got_out.get(), got_t.get(), got_scale_inv.get(), got_amax.get(),
                gradient ? got_dbias.get() : nullptr, dev.ctx);
  compare(checks, name, read(got_out, got_t, got_scale_inv, got_amax), read(want_out, want_t, want_scale_inv, want_amax));
  if (gradient)
    checks.close(name + " bias gradient", widen(got_dbias.download()), widen(want_dbias.download()), kFp32Sum);
}

// LayerNorm writing its output in FP8 (layer_norm_forward_fp8; with `residual`, the residual add
// before it, bias_dropout_add_layer_norm_forward_fp8, dropout p) against the act_t kernel then
// fp8_cast of what it stored: the FP8 bytes of both layouts, amax and scale inverse, the
// statistics, and the input's copy (or the residual sum), all bit for bit.
void check_layer_norm_cast(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols, bool residual, float p) {
  const std::string name = std::string(residual ? "residual add + " : "") + "LayerNorm cast " +
                           shape_name({rows, cols}) + (p > 0 ? " dropout" : "");
  const size_t n = size_t(rows * cols);
  const float eps = 1e-5f;
  const auto x = to_bf16(random_bf16_values(n, -2.0f, 3.0f)), res = to_bf16(random_bf16_values(n));
  const auto bias = random_values(size_t(cols), -0.5f, 0.5f), gamma = random_values(size_t(cols), 0.5f, 1.5f),
             beta = random_values(size_t(cols), -0.5f, 0.5f);
  const DropoutSite site = random_site(1, int(rows), int(cols), p);
  DeviceArray<uint16_t> d_x(x), d_y(n), want_side(residual ? res : std::vector<uint16_t>(n)),
      got_side(residual ? res : std::vector<uint16_t>(n));
  DeviceArray<float> d_bias(bias), d_gamma(gamma), d_beta(beta), want_stats(size_t(2 * rows)),
      got_stats(size_t(2 * rows)), d_scale(std::vector<float>{96.0f});
  // The unfused kernels: act_t stored (the residual sum into the side buffer, or the input copied
  // there), then cast.
  if (residual)
    bias_dropout_add_layer_norm_forward(bf(d_x), d_bias.get(), bf(want_side), bf(want_side), d_gamma.get(), d_beta.get(),
                                        bf(d_y), want_stats.get(), want_stats.get() + rows, rows, cols, eps, site, dev.ctx);
  else
    layer_norm_forward(bf(d_x), d_gamma.get(), d_beta.get(), bf(d_y), want_stats.get(), want_stats.get() + rows, rows,
                       cols, eps, dev.ctx, bf(want_side));
  DeviceArray<uint8_t> want_out(n), want_t(n), got_out(n), got_t(n);
  DeviceArray<float> want_scale_inv(1), want_amax(std::vector<float>{0.0f}), got_scale_inv(1),
      got_amax(std::vector<float>{0.0f});
  Fp8ScaleSource source;
  source.scale = d_scale.get();
  fp8_cast(bf(d_y), rows, cols, Fp8Kind::E4M3, source, want_out.get(), want_t.get(), want_scale_inv.get(),
           want_amax.get(), dev.ctx);

  got_out.poison(), got_t.poison(), got_stats.poison();
  LayerNormFp8Out y;
  y.scale = d_scale.get();
  y.out = got_out.get();
  y.out_t = got_t.get();
  y.scale_inv = got_scale_inv.get();
  y.record = got_amax.get();
  if (residual)
    bias_dropout_add_layer_norm_forward_fp8(bf(d_x), d_bias.get(), bf(got_side), bf(got_side), d_gamma.get(),
                                            d_beta.get(), y, got_stats.get(), got_stats.get() + rows, rows, cols, eps,
                                            site, dev.ctx);
  else
    layer_norm_forward_fp8(bf(d_x), d_gamma.get(), d_beta.get(), y, got_stats.get(), got_stats.get() + rows, rows, cols,
                           eps, dev.ctx, bf(got_side));
  compare(checks, name, read(got_out, got_t, got_scale_inv, got_amax), read(want_out, want_t, want_scale_inv, want_amax));
  const auto got_s = got_stats.download(), want_s = want_stats.download();
  checks.record(name + " statistics and " + (residual ? "residual sum" : "input copy"),
                std::memcmp(got_s.data(), want_s.data(), got_s.size() * sizeof(float)) == 0 &&
                    got_side.download() == want_side.download(),
                "differ from the act_t kernel's");
}

// fp8_transpose of every byte value (NaN patterns included: it moves bytes, it does not convert)
// against the host's transpose.
void check_transpose(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols) {
  const size_t n = size_t(rows * cols);
  std::vector<uint8_t> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = uint8_t((i * 2654435761u) >> 13);
  DeviceArray<uint8_t> d_x(x), got(n);
  got.poison();
  fp8_transpose(d_x.get(), rows, cols, got.get(), dev.ctx);
  const std::vector<uint8_t> out = got.download();
  size_t differing = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) differing += out[size_t(c * rows + r)] != x[size_t(r * cols + c)];
  checks.record("transpose " + shape_name({rows, cols}), differing == 0,
                std::to_string(differing) + " of " + std::to_string(n) + " bytes differ");
}

}  // namespace

void register_fp8_cast_checks() {
  // One tile, a tile's part, several tiles with partial ones at both edges, and the 1.3B model's
  // activation at micro-batch 1 (seq 2048, h 2048).
  for (auto [r, c] : {std::pair<int64_t, int64_t>{128, 64}, {48, 80}, {272, 1040}, {2048, 2048}})
    for (Fp8Kind kind : {Fp8Kind::E4M3, Fp8Kind::E5M2})
      for (bool fp32 : {false, true})
        for (bool delayed : {false, true})
          add_device_check("Fp8Cast", std::string("plain ") + shape_name({r, c}) + (kind == Fp8Kind::E4M3 ? " E4M3" : " E5M2") +
                                          (fp32 ? " fp32" : " act_t") + (delayed ? " given scale" : " from amax"),
                           [r, c, kind, fp32, delayed](Checks& checks, TestDevice& dev) {
                             check_plain_cast(checks, r, c, kind, fp32, delayed, dev);
                           });
  // A shape of one tile, the 1.3B model's FC1 output at micro-batch 1 (seq 2048), and partial tiles.
  for (auto [r, c] : {std::pair<int64_t, int64_t>{64, 64}, {2048, 8192}, {48, 80}, {112, 1040}})
    for (bool gradient : {false, true})
      for (bool with_bias : {true, false})
        add_device_check("Fp8Cast", shape_name({r, c}) + (gradient ? " gradient" : " output") + (with_bias ? "" : " bias in pre"),
                         [r, c, gradient, with_bias](Checks& checks, TestDevice& dev) {
                           check_gelu_cast(checks, dev, r, c, gradient, with_bias);
                         });
  // One block of rows, held rows of 256 (one vector a lane) to 4096 columns (64 KiB of shared
  // memory a block), and the 1.3B model's LayerNorm at micro-batch 4 (8192 tokens, h 2048).
  for (auto [r, c] : {std::pair<int64_t, int64_t>{16, 256}, {48, 768}, {64, 4096}, {8192, 2048}})
    for (bool residual : {false, true})
      for (float p : residual ? std::vector<float>{0.0f, 0.1f} : std::vector<float>{0.0f})
        add_device_check("Fp8Cast", std::string(residual ? "residual add + " : "") + "LayerNorm " +
                                        shape_name({r, c}) + (p > 0 ? " dropout" : ""),
                         [r, c, residual, p](Checks& checks, TestDevice& dev) {
                           check_layer_norm_cast(checks, dev, r, c, residual, p);
                         });
  // One tile, partial tiles at both edges, and the 1.3B model's QKV weight.
  for (auto [r, c] : {std::pair<int64_t, int64_t>{128, 64}, {48, 80}, {272, 1040}, {6144, 2048}})
    add_device_check("Fp8Cast", "transpose " + shape_name({r, c}),
                     [r, c](Checks& checks, TestDevice& dev) { check_transpose(checks, dev, r, c); });
}

}  // namespace ptdp::fused::test
