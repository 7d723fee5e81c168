// Both attention paths, forward and backward, against fp64 causal attention on the same
// [s, b, 3, heads, head_dim] input.
#include <cmath>

#include "attention_unfused.hpp"
#include "device_check_registry.hpp"
#include "device_checks.hpp"
#include "flash_attention.hpp"
#include "gemm.hpp"
#include "test_device.hpp"

namespace ptdp::fused::test {
namespace {

constexpr double kAttentionTolerance = 1e-2;  // probabilities and their gradients pass through bf16

struct AttentionReference {
  std::vector<double> ctx, dqkv;
};

AttentionReference reference_attention(const std::vector<float>& qkv, const std::vector<float>& dctx,
                                       const AttentionShape& shape) {
  const int s = shape.seq, b = shape.batch, heads = shape.heads, d = shape.head_dim;
  const int64_t w = shape.width();
  const double scale = 1.0 / std::sqrt(double(d));
  AttentionReference ref;
  ref.ctx.assign(size_t(shape.tokens() * w), 0.0);
  ref.dqkv.assign(size_t(shape.tokens() * 3 * w), 0.0);
  auto at = [&](int token, int sample, int part, int head) { return size_t(((int64_t(token) * b + sample) * 3 + part) * w + head * d); };
  auto ctx_at = [&](int token, int sample, int head) { return size_t((int64_t(token) * b + sample) * w + head * d); };
  std::vector<double> p(size_t(s) * s), dp(size_t(s) * s);
  for (int j = 0; j < b; ++j)
    for (int hd = 0; hd < heads; ++hd) {
      for (int i = 0; i < s; ++i) {
        double mx = -INFINITY;
        for (int k = 0; k <= i; ++k) {
          double dot = 0;
          for (int e = 0; e < d; ++e) dot += double(qkv[at(i, j, 0, hd) + e]) * qkv[at(k, j, 1, hd) + e];
          p[size_t(i) * s + k] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        double sum = 0;
        for (int k = 0; k <= i; ++k) sum += (p[size_t(i) * s + k] = std::exp(p[size_t(i) * s + k] - mx));
        for (int k = 0; k <= i; ++k) p[size_t(i) * s + k] /= sum;
        for (int e = 0; e < d; ++e) {
          double acc = 0;
          for (int k = 0; k <= i; ++k) acc += p[size_t(i) * s + k] * qkv[at(k, j, 2, hd) + e];
          ref.ctx[ctx_at(i, j, hd) + e] = acc;
        }
      }
      // dP, then dS = P * (dP - rowdot), dQ = dS K * scale, dK = dS^T Q * scale, dV = P^T dO.
      for (int i = 0; i < s; ++i) {
        double rowdot = 0;
        for (int k = 0; k <= i; ++k) {
          double acc = 0;
          for (int e = 0; e < d; ++e) acc += double(dctx[ctx_at(i, j, hd) + e]) * qkv[at(k, j, 2, hd) + e];
          dp[size_t(i) * s + k] = acc;
          rowdot += acc * p[size_t(i) * s + k];
        }
        for (int k = 0; k <= i; ++k) {
          const double pk = p[size_t(i) * s + k];
          const double ds = pk * (dp[size_t(i) * s + k] - rowdot) * scale;
          for (int e = 0; e < d; ++e) {
            ref.dqkv[at(i, j, 0, hd) + e] += ds * qkv[at(k, j, 1, hd) + e];
            ref.dqkv[at(k, j, 1, hd) + e] += ds * qkv[at(i, j, 0, hd) + e];
            ref.dqkv[at(k, j, 2, hd) + e] += pk * dctx[ctx_at(i, j, hd) + e];
          }
        }
      }
    }
  return ref;
}

// One of q, k, v out of a [tokens, 3, w] array.
std::vector<double> part_of(const std::vector<double>& qkv, int part, int64_t tokens, int64_t w) {
  std::vector<double> out(size_t(tokens * w));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t e = 0; e < w; ++e) out[size_t(t * w + e)] = qkv[size_t((t * 3 + part) * w + e)];
  return out;
}

void check_attention(Checks& checks, TestDevice& dev, bool flash, const AttentionShape& shape) {
  const std::string name = std::string(flash ? "flash" : "unfused") + " attention " +
                           shape_name({shape.seq, shape.batch, shape.heads, shape.head_dim});
  const int64_t tokens = shape.tokens(), w = shape.width();
  auto qkv = random_bf16_values(size_t(tokens * 3 * w), -1.5f, 1.5f);
  auto dctx = random_bf16_values(size_t(tokens * w));
  Gemm gemm(dev.stream, dev.arena, size_t(32) << 20);
  std::unique_ptr<Attention> attention;
  if (flash) attention = make_flash_attention(shape, dev.ctx);
  else attention = std::make_unique<UnfusedAttention>(shape, gemm, dev.ctx);
  DeviceArray<uint16_t> d_qkv(to_bf16(qkv)), d_ctx(size_t(tokens * w)), d_dctx(to_bf16(dctx)),
      d_dqkv(size_t(tokens * 3 * w));
  d_ctx.poison();
  d_dqkv.poison();
  auto saved = attention->forward(bf(d_qkv), bf(d_ctx), true);
  attention->backward(bf(d_qkv), bf(d_ctx), bf(d_dctx), saved.get(), bf(d_dqkv));
  dev.sync();

  const AttentionReference ref = reference_attention(qkv, dctx, shape);
  checks.close(name + " forward", widen(d_ctx.download()), ref.ctx, kAttentionTolerance);
  const auto got = widen(d_dqkv.download());
  const char* parts[] = {"dq", "dk", "dv"};
  for (int part = 0; part < 3; ++part)
    checks.close(name + " backward " + parts[part], part_of(got, part, tokens, w), part_of(ref.dqkv, part, tokens, w),
                 kAttentionTolerance);
}

}  // namespace

void register_attention_checks() {
  const AttentionShape unfused_shapes[] = {{64, 2, 4, 32}, {37, 3, 2, 16}, {128, 1, 2, 64}, {20, 2, 3, 8}};
  for (const auto& shape : unfused_shapes)
    add_device_check("Attention", "unfused " + shape_name({shape.seq, shape.batch, shape.heads, shape.head_dim}),
                     [shape](Checks& checks, TestDevice& dev) { check_attention(checks, dev, false, shape); });
  const AttentionShape flash_shapes[] = {{64, 2, 4, 32}, {128, 2, 2, 64}, {256, 1, 3, 128}, {100, 2, 2, 64}};
  for (const auto& shape : flash_shapes)
    add_device_check("Attention", "flash " + shape_name({shape.seq, shape.batch, shape.heads, shape.head_dim}), [shape](Checks& checks, TestDevice& dev) {
      if (!flash_attention_built()) GTEST_SKIP() << "flash attention not built (no cudnn-frontend headers at configure time)";
      check_attention(checks, dev, true, shape);
    });
}

}  // namespace ptdp::fused::test
