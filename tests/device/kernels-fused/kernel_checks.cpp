// Each fused kernel against an fp64 reference computed here, on fresh random inputs, for several
// shapes (vectorized and scalar paths, sizes that are not multiples of 8).
#include <cmath>
#include <numbers>
#include <tuple>

#include "adam.hpp"
#include "bias_dropout_add.hpp"
#include "bias_gelu.hpp"
#include "column_reduce.hpp"
#include "cross_entropy.hpp"
#include "device_check_registry.hpp"
#include "device_checks.hpp"
#include "embedding.hpp"
#include "gemm.hpp"
#include "grad_norm.hpp"
#include "random_dropout_site.hpp"
#include "layer_norm.hpp"
#include "residual_layer_norm.hpp"
#include "softmax.hpp"
#include "test_device.hpp"
#include "token_rows.hpp"
#include "working_copy.hpp"

namespace ptdp::fused::test {
namespace {

constexpr double kBf16Output = 5e-3;  // one rounding of the output to bf16
constexpr double kBf16Chain = 1e-2;   // bf16 intermediates feed the output
constexpr double kFp32 = 1e-4;        // fp32 arithmetic on exact inputs

double gelu_ref(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double gelu_grad_ref(double x) {
  const double c = std::sqrt(2.0 / std::numbers::pi);
  const double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

void check_bias_gelu(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols) {
  const std::string shape = std::string(" ") + shape_name({rows, cols});
  const size_t n = size_t(rows * cols);
  auto x = random_bf16_values(n, -3.0f, 3.0f);
  auto bias = random_values(size_t(cols), -0.5f, 0.5f);
  auto dy = random_bf16_values(n);
  auto dbias0 = random_values(size_t(cols));
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_y(n), d_g(to_bf16(dy));
  DeviceArray<float> d_bias(bias), d_dbias(dbias0);
  d_y.poison();
  bias_gelu_forward(bf(d_x), d_bias.get(), bf(d_y), rows, cols, dev.ctx);
  // In place, as the block calls it.
  bias_gelu_backward(bf(d_g), bf(d_x), d_bias.get(), bf(d_g), d_dbias.get(), rows, cols, dev.ctx);

  std::vector<double> y(n), dx(n), db(dbias0.begin(), dbias0.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double pre = double(x[i]) + bias[size_t(c)];
      y[i] = gelu_ref(pre);
      dx[i] = dy[i] * gelu_grad_ref(pre);
      db[size_t(c)] += dx[i];
    }
  checks.close("bias_gelu forward" + shape, widen(d_y.download()), y, kBf16Output);
  checks.close("bias_gelu backward dx" + shape, widen(d_g.download()), dx, kBf16Output);
  checks.close("bias_gelu backward dbias" + shape, widen(d_dbias.download()), db, kFp32);
}

void check_bias_dropout_add(Checks& checks, TestDevice& dev, int s, int b, int h, float p) {
  const std::string shape = std::string(" ") + shape_name({s, b, h}) + " p=" + std::to_string(p).substr(0, 4);
  const int64_t rows = int64_t(s) * b;
  const size_t n = size_t(rows * h);
  auto x = random_bf16_values(n), residual = random_bf16_values(n), dout = random_bf16_values(n);
  auto bias = random_values(size_t(h), -0.5f, 0.5f), dbias0 = random_values(size_t(h));
  const DropoutSite site = random_site(b, s, h, p);
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_res(to_bf16(residual)), d_out(n), d_dout(to_bf16(dout)), d_dx(n);
  DeviceArray<float> d_bias(bias), d_dbias(dbias0);
  d_out.poison();
  d_dx.poison();
  bias_dropout_add_forward(bf(d_x), d_bias.get(), bf(d_res), bf(d_out), rows, h, site, dev.ctx);
  bias_dropout_add_backward(bf(d_dout), bf(d_dx), d_dbias.get(), rows, h, site, dev.ctx);

  std::vector<double> out(n), dx(n), db(dbias0.begin(), dbias0.end());
  size_t dropped = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int f = 0; f < h; ++f) {
      const size_t i = size_t(r * h + f);
      const double factor = site.factor(r, f);
      dropped += factor == 0.0;
      out[i] = residual[i] + factor * (double(x[i]) + bias[size_t(f)]);
      dx[i] = factor * dout[i];
      db[size_t(f)] += dx[i];
    }
  checks.close("bias_dropout_add forward" + shape, widen(d_out.download()), out, kBf16Output);
  checks.close("bias_dropout_add backward dx" + shape, widen(d_dx.download()), dx, kBf16Output);
  checks.close("bias_dropout_add backward dbias" + shape, widen(d_dbias.download()), db, kFp32);
  // The mask itself: about p of the elements dropped (five standard deviations).
  const double expected = p * double(n), sigma = std::sqrt(double(n) * p * (1 - p));
  checks.record("dropout mask rate" + shape, std::abs(double(dropped) - expected) <= 5 * sigma + 1e-9,
                std::to_string(dropped) + " of " + std::to_string(n) + " dropped");
}

// The fused bias + dropout + add and LayerNorm against the two kernels it replaces (checked
// against fp64 above): the same bits, with the sum written over its residual as the blocks may.
void check_residual_layer_norm(Checks& checks, TestDevice& dev, int s, int b, int h, float p) {
  const std::string shape = std::string(" ") + shape_name({s, b, h}) + " p=" + std::to_string(p).substr(0, 4);
  const int64_t rows = int64_t(s) * b;
  const size_t n = size_t(rows * h);
  const float eps = 1e-5f;
  auto x = to_bf16(random_bf16_values(n)), residual = to_bf16(random_bf16_values(n, -2.0f, 3.0f));
  auto bias = random_values(size_t(h), -0.5f, 0.5f), gamma = random_values(size_t(h), 0.5f, 1.5f),
       beta = random_values(size_t(h), -0.5f, 0.5f);
  const DropoutSite site = random_site(b, s, h, p);
  DeviceArray<uint16_t> d_x(x), d_sum(n), d_y(n), d_fused_res(residual), d_fused_y(n), d_res(residual);
  DeviceArray<float> d_bias(bias), d_gamma(gamma), d_beta(beta), d_stats(size_t(2 * rows)),
      d_fused_stats(size_t(2 * rows));
  for (auto* a : {&d_sum, &d_y, &d_fused_y}) a->poison();
  d_stats.poison();
  d_fused_stats.poison();
  bias_dropout_add_forward(bf(d_x), d_bias.get(), bf(d_res), bf(d_sum), rows, h, site, dev.ctx);
  layer_norm_forward(bf(d_sum), d_gamma.get(), d_beta.get(), bf(d_y), d_stats.get(), d_stats.get() + rows, rows, h,
                     eps, dev.ctx);
  bias_dropout_add_layer_norm_forward(bf(d_x), d_bias.get(), bf(d_fused_res), bf(d_fused_res), d_gamma.get(),
                                      d_beta.get(), bf(d_fused_y), d_fused_stats.get(), d_fused_stats.get() + rows,
                                      rows, h, eps, site, dev.ctx);
  const auto differ = [](const auto& a, const auto& b) {
    size_t count = 0;
    for (size_t i = 0; i < a.size(); ++i) count += std::memcmp(&a[i], &b[i], sizeof a[i]) != 0;
    return count;
  };
  const size_t sums = differ(d_fused_res.download(), d_sum.download()), outputs = differ(d_fused_y.download(), d_y.download()),
               stats = differ(d_fused_stats.download(), d_stats.download());
  checks.record("residual add + layer_norm fused" + shape, sums + outputs + stats == 0,
                std::to_string(sums) + " sums, " + std::to_string(outputs) + " outputs, " + std::to_string(stats) +
                    " statistics differ from bias_dropout_add then layer_norm");
}

// Backward both ways: one cooperative launch (fused_layer_norm_backward) and separate launches;
// the residual gradient is added in place, as the blocks call it, and with residual_sum its
// column sums are added to an accumulator (a bias gradient).
void check_layer_norm(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols, bool fused, bool residual_sum) {
  const std::string shape = std::string(" ") + shape_name({rows, cols}) + (fused ? " one launch" : " split") +
                            (residual_sum ? " with residual sums" : "");
  KernelContext ctx = dev.ctx;
  ctx.fused_layer_norm_backward = fused;
  const size_t n = size_t(rows * cols);
  const float eps = 1e-5f;
  auto x = random_bf16_values(n, -2.0f, 3.0f), dy = random_bf16_values(n), res = random_bf16_values(n);
  auto gamma = random_values(size_t(cols), 0.5f, 1.5f), beta = random_values(size_t(cols), -0.5f, 0.5f);
  auto dgamma0 = random_values(size_t(cols)), dbeta0 = random_values(size_t(cols)), dres0 = random_values(size_t(cols));
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_y(n), d_copy(n), d_dy(to_bf16(dy)), d_res(to_bf16(res));
  DeviceArray<float> d_gamma(gamma), d_beta(beta), d_mean(static_cast<size_t>(rows)), d_rstd(static_cast<size_t>(rows)), d_dgamma(dgamma0),
      d_dbeta(dbeta0), d_dres(dres0);
  d_y.poison();
  d_copy.poison();
  layer_norm_forward(bf(d_x), d_gamma.get(), d_beta.get(), bf(d_y), d_mean.get(), d_rstd.get(), rows, cols, eps,
                     ctx, bf(d_copy));
  checks.record("layer_norm forward copy of its input" + shape, d_copy.download() == to_bf16(x),
                "the copy differs from the input");
  layer_norm_backward(bf(d_dy), bf(d_x), d_gamma.get(), d_mean.get(), d_rstd.get(), bf(d_res), bf(d_res),
                      d_dgamma.get(), d_dbeta.get(), rows, cols, ctx, residual_sum ? d_dres.get() : nullptr);

  std::vector<double> y(n), mean(static_cast<size_t>(rows)), rstd(static_cast<size_t>(rows)), dx(n);
  std::vector<double> dg(dgamma0.begin(), dgamma0.end()), dbt(dbeta0.begin(), dbeta0.end()),
      dres(dres0.begin(), dres0.end());
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = &x[size_t(r * cols)];
    double mu = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mu += xr[c];
    mu /= double(cols);
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / std::sqrt(var / double(cols) + eps);
    mean[size_t(r)] = mu;
    rstd[size_t(r)] = rs;
    double sum_g = 0, sum_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double xhat = (xr[c] - mu) * rs;
      y[i] = xhat * gamma[size_t(c)] + beta[size_t(c)];
      sum_g += dy[i] * gamma[size_t(c)];
      sum_gx += dy[i] * gamma[size_t(c)] * xhat;
      dg[size_t(c)] += dy[i] * xhat;
      dbt[size_t(c)] += dy[i];
      if (residual_sum) dres[size_t(c)] += res[i];
    }
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double xhat = (xr[c] - mu) * rs;
      dx[i] = res[i] + rs * (dy[i] * gamma[size_t(c)] - sum_g / double(cols) - xhat * sum_gx / double(cols));
    }
  }
  checks.close("layer_norm forward" + shape, widen(d_y.download()), y, kBf16Output);
  checks.close("layer_norm forward mean" + shape, widen(d_mean.download()), mean, kFp32);
  checks.close("layer_norm forward rstd" + shape, widen(d_rstd.download()), rstd, kFp32);
  checks.close("layer_norm backward dx" + shape, widen(d_res.download()), dx, kBf16Output);
  checks.close("layer_norm backward dgamma" + shape, widen(d_dgamma.download()), dg, kFp32);
  checks.close("layer_norm backward dbeta" + shape, widen(d_dbeta.download()), dbt, kFp32);
  // Without residual_sum the accumulator must not be touched.
  checks.close("layer_norm backward residual sums" + shape, widen(d_dres.download()), dres, kFp32);
}

// Row softmax of scale * scores over the visible keys, in fp64; backward from the given probs.
void softmax_reference(const std::vector<float>& scores, const std::function<bool(int64_t, int, int)>& visible,
                       int64_t matrices, int rows, int cols, double scale, std::vector<double>& probs) {
  probs.assign(scores.size(), 0.0);
  for (int64_t m = 0; m < matrices; ++m)
    for (int i = 0; i < rows; ++i) {
      const size_t base = size_t((m * rows + i) * cols);
      double mx = -INFINITY;
      for (int j = 0; j < cols; ++j)
        if (visible(m, i, j)) mx = std::max(mx, scale * scores[base + j]);
      if (mx == -INFINITY) continue;
      double sum = 0;
      for (int j = 0; j < cols; ++j)
        if (visible(m, i, j)) sum += std::exp(scale * scores[base + j] - mx);
      for (int j = 0; j < cols; ++j)
        if (visible(m, i, j)) probs[base + j] = std::exp(scale * scores[base + j] - mx) / sum;
    }
}

std::vector<double> softmax_backward_reference(const std::vector<double>& probs, const std::vector<float>& dprobs,
                                               int64_t total_rows, int cols, double scale) {
  std::vector<double> ds(probs.size());
  for (int64_t r = 0; r < total_rows; ++r) {
    const size_t base = size_t(r * cols);
    double dot = 0;
    for (int j = 0; j < cols; ++j) dot += probs[base + j] * dprobs[base + j];
    for (int j = 0; j < cols; ++j) ds[base + j] = scale * probs[base + j] * (dprobs[base + j] - dot);
  }
  return ds;
}

void check_causal_softmax(Checks& checks, TestDevice& dev, int64_t matrices, int seq) {
  const std::string shape = std::string(" ") + shape_name({matrices, seq, seq});
  const size_t n = size_t(matrices * seq * seq);
  const float scale = 0.3f;
  auto scores = random_bf16_values(n, -4.0f, 4.0f), dprobs = random_bf16_values(n);
  DeviceArray<uint16_t> d_scores(to_bf16(scores)), d_probs(n), d_grad(to_bf16(dprobs));
  d_probs.poison();
  scaled_causal_softmax_forward(bf(d_scores), bf(d_probs), matrices, seq, seq, scale, dev.ctx);
  // In place, as the unfused attention calls it.
  scaled_softmax_backward(bf(d_probs), bf(d_grad), bf(d_grad), matrices, seq, seq, scale, true, dev.ctx);
  std::vector<double> probs;
  softmax_reference(scores, [](int64_t, int i, int j) { return j <= i; }, matrices, seq, seq, scale, probs);
  checks.close("causal softmax forward" + shape, widen(d_probs.download()), probs, kBf16Output);
  checks.close("causal softmax backward" + shape, widen(d_grad.download()),
               softmax_backward_reference(probs, dprobs, matrices * seq, seq, scale), kBf16Chain);
}

void check_masked_softmax(Checks& checks, TestDevice& dev, int batch, int heads, int rows, int cols) {
  const std::string shape = std::string(" ") + shape_name({batch, heads, rows, cols});
  const size_t n = size_t(batch) * heads * rows * cols;
  const float scale = 0.125f;
  auto scores = random_bf16_values(n, -6.0f, 6.0f), dprobs = random_bf16_values(n);
  std::vector<uint8_t> mask(size_t(batch) * rows * cols);
  std::bernoulli_distribution hidden(0.3);
  for (auto& m : mask) m = hidden(rng()) ? 1 : 0;
  for (int j = 0; j < cols; ++j) mask[size_t(j)] = 1;  // sample 0, query 0: every key hidden
  DeviceArray<uint16_t> d_scores(to_bf16(scores)), d_probs(n), d_grad(to_bf16(dprobs)), d_ds(n);
  DeviceArray<uint8_t> d_mask(mask);
  d_probs.poison();
  d_ds.poison();
  scaled_masked_softmax_forward(bf(d_scores), d_mask.get(), bf(d_probs), batch, heads, rows, cols, scale, dev.ctx);
  scaled_softmax_backward(bf(d_probs), bf(d_grad), bf(d_ds), int64_t(batch) * heads, rows, cols, scale, false,
                          dev.ctx);
  std::vector<double> probs;
  auto visible = [&](int64_t m, int i, int j) { return mask[size_t(((m / heads) * rows + i) * cols + j)] == 0; };
  softmax_reference(scores, visible, int64_t(batch) * heads, rows, cols, scale, probs);
  const auto got = widen(d_probs.download());
  checks.close("masked softmax forward" + shape, got, probs, kBf16Output);
  bool hidden_row_zero = true;
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < cols; ++j) hidden_row_zero &= got[size_t(h * rows * cols + j)] == 0.0;
  checks.record("masked softmax fully hidden row" + shape, hidden_row_zero, "probabilities of a row with no visible key are 0");
  checks.close("masked softmax backward" + shape, widen(d_ds.download()),
               softmax_backward_reference(probs, dprobs, int64_t(batch) * heads * rows, cols, scale), kBf16Chain);
}

void check_embedding(Checks& checks, TestDevice& dev, int s, int b, int h, int64_t vocab_begin, int64_t vocab_rows) {
  const std::string shape = std::string(" ") + shape_name({s, b, h}) + " shard [" + std::to_string(vocab_begin) + ", " +
                            std::to_string(vocab_begin + vocab_rows) + ")";
  const int64_t rows = int64_t(s) * b;
  const size_t n = size_t(rows * h);
  const DropoutSite site = random_site(b, s, h, 0.1f);
  // Ids below, inside and above the shard, from a small pool so that rows repeat a token.
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab_begin + vocab_rows + 5));
  std::vector<int32_t> pool{int32_t(vocab_begin), int32_t(vocab_begin + vocab_rows - 1), int32_t(vocab_begin + vocab_rows)};
  if (vocab_begin > 0) pool.push_back(int32_t(vocab_begin - 1));
  for (int i = 0; i < 12; ++i) pool.push_back(id(rng()));
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(rows));
  for (auto& t : tokens) t = pool[pick(rng())];
  auto word = random_values(size_t(vocab_rows * h)), position = random_values(size_t(s) * h);
  auto dout = random_bf16_values(n);
  auto dword0 = random_values(word.size()), dpos0 = random_values(position.size());
  DeviceArray<int32_t> d_tokens(tokens);
  DeviceArray<float> d_word(word), d_pos(position), d_dword(dword0), d_dpos(dpos0);
  DeviceArray<uint16_t> d_out(n), d_out2(n), d_dout(to_bf16(dout));
  d_out.poison();
  d_out2.poison();
  embedding_forward(d_tokens.get(), d_word.get(), vocab_begin, vocab_rows, d_pos.get(), bf(d_out), rows, h, b, site,
                    dev.ctx);
  // The tensor-parallel order: lookup, (all-reduce), then position and dropout.
  embedding_forward(d_tokens.get(), d_word.get(), vocab_begin, vocab_rows, nullptr, bf(d_out2), rows, h, b, site,
                    dev.ctx);
  embedding_add_position(bf(d_out2), d_pos.get(), rows, h, b, site, dev.ctx);
  const TokenRows grouped = group_rows_by_token(tokens.data(), rows, vocab_begin, vocab_rows);
  DeviceArray<int32_t> d_grouped(grouped.packed);
  embedding_backward(bf(d_dout), rows, h, b, site, d_dpos.get(), view_token_rows(d_grouped.get(), grouped.unique),
                     d_dword.get(), dev.ctx);

  std::vector<double> out(n), dword(dword0.begin(), dword0.end()), dpos(dpos0.begin(), dpos0.end());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t local = tokens[size_t(r)] - vocab_begin;
    const bool here = local >= 0 && local < vocab_rows;
    for (int f = 0; f < h; ++f) {
      const size_t i = size_t(r * h + f);
      const double factor = site.factor(r, f);
      out[i] = factor * ((here ? word[size_t(local * h + f)] : 0.0) + position[size_t((r / b) * h + f)]);
      const double g = factor * dout[i];
      dpos[size_t((r / b) * h + f)] += g;
      if (here) dword[size_t(local * h + f)] += g;
    }
  }
  checks.close("embedding forward" + shape, widen(d_out.download()), out, kBf16Output);
  checks.close("embedding forward, vocab-parallel order" + shape, widen(d_out2.download()), out, kBf16Output);
  checks.close("embedding backward dposition" + shape, widen(d_dpos.download()), dpos, kFp32);
  checks.close("embedding backward dword" + shape, widen(d_dword.download()), dword, kFp32);
}

// Cross entropy over `shards` vocabulary shards; the group's combination is done here on the host
// (max, then sums) the way the all-reduces do it.
void check_cross_entropy(Checks& checks, TestDevice& dev, int64_t rows, int64_t vocab, int64_t padded, int shards) {
  const std::string shape = std::string(" rows=") + std::to_string(rows) + " vocab=" + std::to_string(vocab) + "/" +
                            std::to_string(padded) + " shards=" + std::to_string(shards);
  const int64_t cols = padded / shards;
  auto logits = random_bf16_values(size_t(rows * padded), -5.0f, 5.0f);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  for (auto& t : targets) t = id(rng());
  DeviceArray<int32_t> d_targets(targets);
  std::vector<std::unique_ptr<DeviceArray<uint16_t>>> d_logits;
  std::vector<std::unique_ptr<DeviceArray<float>>> d_stats;
  std::vector<float> group_max(size_t(rows), -INFINITY);
  for (int k = 0; k < shards; ++k) {
    std::vector<float> part(size_t(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) part[size_t(r * cols + c)] = logits[size_t(r * padded + k * cols + c)];
    d_logits.push_back(std::make_unique<DeviceArray<uint16_t>>(to_bf16(part)));
    d_stats.push_back(std::make_unique<DeviceArray<float>>(size_t(3 * rows)));
    const int64_t begin = k * cols, valid = std::clamp<int64_t>(vocab - begin, 0, cols);
    cross_entropy_row_stats(bf(*d_logits.back()), d_targets.get(), rows, cols, begin, valid, d_stats.back()->get(),
                            dev.ctx);
    const auto stats = d_stats.back()->download();
    for (int64_t r = 0; r < rows; ++r) group_max[size_t(r)] = std::max(group_max[size_t(r)], stats[size_t(r)]);
  }
  std::vector<float> combined(size_t(3 * rows), 0.0f);
  DeviceArray<float> d_group_max(group_max);
  for (int k = 0; k < shards; ++k) {
    if (shards > 1) cross_entropy_rescale(d_stats[size_t(k)]->get(), d_group_max.get(), rows, dev.ctx);
    const auto stats = d_stats[size_t(k)]->download();
    for (int64_t r = 0; r < rows; ++r) {
      combined[size_t(r)] = stats[size_t(r)];
      combined[size_t(rows + r)] += stats[size_t(rows + r)];
      combined[size_t(2 * rows + r)] += stats[size_t(2 * rows + r)];
    }
  }
  DeviceArray<float> d_combined(combined), d_loss(1);
  d_loss.poison();
  cross_entropy_loss(d_combined.get(), rows, d_loss.get(), dev.ctx);
  const float scale = 0.7f / float(rows);
  std::vector<double> got_grad(size_t(rows * padded));
  for (int k = 0; k < shards; ++k) {
    const int64_t begin = k * cols, valid = std::clamp<int64_t>(vocab - begin, 0, cols);
    d_logits[size_t(k)]->upload([&] {
      std::vector<uint16_t> part(size_t(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) part[size_t(r * cols + c)] = to_bf16(logits[size_t(r * padded + begin + c)]);
      return part;
    }());
    cross_entropy_backward(bf(*d_logits[size_t(k)]), d_targets.get(), d_combined.get(), rows, cols, begin, valid,
                           scale, dev.ctx);
    const auto g = widen(d_logits[size_t(k)]->download());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) got_grad[size_t(r * padded + begin + c)] = g[size_t(r * cols + c)];
  }

  double loss = 0;
  std::vector<double> grad(size_t(rows * padded), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = &logits[size_t(r * padded)];
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < vocab; ++c) mx = std::max(mx, double(row[c]));
    for (int64_t c = 0; c < vocab; ++c) sum += std::exp(row[c] - mx);
    loss += std::log(sum) + mx - row[targets[size_t(r)]];
    for (int64_t c = 0; c < vocab; ++c)
      grad[size_t(r * padded + c)] = scale * (std::exp(row[c] - mx) / sum - (c == targets[size_t(r)] ? 1.0 : 0.0));
  }
  loss /= double(rows);
  checks.close("cross_entropy loss" + shape, widen(d_loss.download()), {loss}, kFp32);
  checks.close("cross_entropy backward" + shape, got_grad, grad, kBf16Output);
  bool padding_zero = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = vocab; c < padded; ++c) padding_zero &= got_grad[size_t(r * padded + c)] == 0.0;
  checks.record("cross_entropy padded columns" + shape, padding_zero, "gradient of padded vocabulary columns is 0");
  if (shards > 1) return;

  // The one-pass kernel of an unsplit vocabulary on the same logits: its stats give the loss, and
  // it leaves the gradient in their place.
  DeviceArray<uint16_t> d_one(to_bf16(logits));
  DeviceArray<float> d_one_stats(size_t(3 * rows)), d_one_loss(1);
  d_one_stats.poison();
  d_one_loss.poison();
  cross_entropy_stats_and_gradient(bf(d_one), d_targets.get(), rows, padded, vocab, scale, d_one_stats.get(), dev.ctx);
  cross_entropy_loss(d_one_stats.get(), rows, d_one_loss.get(), dev.ctx);
  const auto one_grad = widen(d_one.download());
  checks.close("cross_entropy one pass loss" + shape, widen(d_one_loss.download()), {loss}, kFp32);
  checks.close("cross_entropy one pass gradient" + shape, one_grad, grad, kBf16Output);
  padding_zero = true;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = vocab; c < padded; ++c) padding_zero &= one_grad[size_t(r * padded + c)] == 0.0;
  checks.record("cross_entropy one pass padded columns" + shape, padding_zero,
                "gradient of padded vocabulary columns is 0");
}

// With `autotune` every GEMM's first call times the heuristic's candidates on the same operands
// and output first: the accumulated weight gradient must come out as if it had not.
void check_gemm(Checks& checks, TestDevice& dev, int64_t rows, int64_t in, int64_t out, bool with_bias,
                bool autotune) {
  const std::string shape = std::string(" ") + shape_name({rows, in, out}) + (with_bias ? " bias" : "") +
                            (autotune ? " autotuned" : "");
  Gemm gemm(dev.stream, dev.arena, size_t(32) << 20, autotune);
  auto x = random_bf16_values(size_t(rows * in)), w = random_bf16_values(size_t(out * in));
  auto bias = random_bf16_values(size_t(out)), dy = random_bf16_values(size_t(rows * out));
  auto dw0 = random_values(size_t(out * in));
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_w(to_bf16(w)), d_b(to_bf16(bias)), d_dy(to_bf16(dy));
  DeviceArray<uint16_t> d_y(size_t(rows * out)), d_dx(size_t(rows * in));
  DeviceArray<float> d_dw(dw0);
  d_y.poison();
  d_dx.poison();
  gemm.linear_forward(bf(d_x), bf(d_w), with_bias ? bf(d_b) : nullptr, bf(d_y), rows, in, out);
  gemm.linear_backward_input(bf(d_dy), bf(d_w), bf(d_dx), rows, in, out);
  gemm.linear_backward_weight(bf(d_dy), bf(d_x), d_dw.get(), rows, in, out);

  std::vector<double> y(size_t(rows * out)), dx(size_t(rows * in), 0.0), dw(dw0.begin(), dw0.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = with_bias ? bias[size_t(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += double(x[size_t(r * in + i)]) * w[size_t(o * in + i)];
      y[size_t(r * out + o)] = acc;
      const double g = dy[size_t(r * out + o)];
      for (int64_t i = 0; i < in; ++i) {
        dx[size_t(r * in + i)] += g * w[size_t(o * in + i)];
        dw[size_t(o * in + i)] += g * x[size_t(r * in + i)];
      }
    }
  checks.close("gemm linear forward" + shape, widen(d_y.download()), y, kBf16Output);
  checks.close("gemm linear backward input" + shape, widen(d_dx.download()), dx, kBf16Output);
  checks.close("gemm linear backward weight (accumulating)" + shape, widen(d_dw.download()), dw, kFp32);
}

double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// The cuBLASLt epilogues of the linear layers (gelu_epilogue, bias_grad_epilogue): bias + GeLU with
// the GeLU input kept, dGeLU from that input, and the bias gradient of the weight-gradient GEMM,
// each against fp64; the accumulators start nonzero, as across microbatches.
void check_gemm_epilogues(Checks& checks, TestDevice& dev, int64_t rows, int64_t in, int64_t out, bool autotune) {
  const std::string shape = std::string(" ") + shape_name({rows, in, out}) + (autotune ? " autotuned" : "");
  Gemm gemm(dev.stream, dev.arena, size_t(32) << 20, autotune);
  auto x = random_bf16_values(size_t(rows * in)), w = random_bf16_values(size_t(out * in));
  auto bias = random_bf16_values(size_t(out), -0.5f, 0.5f), dy = random_bf16_values(size_t(rows * out));
  auto dw0 = random_values(size_t(out * in)), db0 = random_values(size_t(out));
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_w(to_bf16(w)), d_b(to_bf16(bias)), d_dy(to_bf16(dy));
  DeviceArray<uint16_t> d_y(size_t(rows * out)), d_pre(size_t(rows * out)), d_dpre(size_t(rows * out));
  DeviceArray<float> d_dw(dw0), d_db(db0);
  d_y.poison();
  d_pre.poison();
  d_dpre.poison();
  // y = gelu(x W^T + b) keeping x W^T + b; then, as if y fed a layer whose input gradient GEMM
  // is the identity on [rows, out]: d_pre = (dy I) * gelu'(pre).
  gemm.linear_forward_gelu(bf(d_x), bf(d_w), bf(d_b), bf(d_y), bf(d_pre), rows, in, out);
  std::vector<float> eye(size_t(out * out), 0.0f);
  for (int64_t i = 0; i < out; ++i) eye[size_t(i * out + i)] = 1.0f;
  DeviceArray<uint16_t> d_eye(to_bf16(eye));
  gemm.linear_backward_input_dgelu(bf(d_dy), bf(d_eye), bf(d_pre), bf(d_dpre), rows, out, out);
  gemm.linear_backward_weight(bf(d_dy), bf(d_x), d_dw.get(), rows, in, out, d_db.get());

  const auto pre_dev = widen(d_pre.download());
  std::vector<double> y(size_t(rows * out)), pre(y.size()), dpre(y.size());
  std::vector<double> dw(dw0.begin(), dw0.end()), db(db0.begin(), db0.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const size_t at = size_t(r * out + o);
      double acc = bias[size_t(o)];
      for (int64_t i = 0; i < in; ++i) acc += double(x[size_t(r * in + i)]) * w[size_t(o * in + i)];
      pre[at] = acc;
      y[at] = gelu_ref(acc);
      // gelu' of the bf16 GeLU input the epilogue kept, as backward sees it.
      dpre[at] = double(dy[at]) * gelu_grad_ref(pre_dev[at]);
      db[size_t(o)] += dy[at];
      for (int64_t i = 0; i < in; ++i) dw[size_t(o * in + i)] += double(dy[at]) * x[size_t(r * in + i)];
    }
  checks.close("gemm GeLU epilogue: gelu(x W^T + b)" + shape, widen(d_y.download()), y, kBf16Output);
  checks.close("gemm GeLU epilogue: kept GeLU input x W^T + b" + shape, pre_dev, pre, kBf16Output);
  checks.close("gemm dGeLU epilogue: input gradient" + shape, widen(d_dpre.download()), dpre, kBf16Output);
  checks.close("gemm BGRADB epilogue: weight gradient (accumulating)" + shape, widen(d_dw.download()), dw, kFp32);
  // The bias gradient is summed in bf16 where cuBLASLt offers no fp32 sum for the epilogue
  // (gemm.cpp's bias_types), hence bf16's tolerance; the error printed tells which it was (fp32
  // sums land near 1e-7).
  checks.close("gemm BGRADB epilogue: bias gradient (accumulating)" + shape, widen(d_db.download()), db, kBf16Output);
}

// Which GeLU the epilogue computes: kernels-ref's (and GPT-2's) tanh form or the erf form. The
// GEMM passes one weight through (x one-hot), so each GeLU input is a known bf16 sum, and each
// bf16 output either equals the bf16 rounding of a form or not.
void check_gelu_epilogue_formula(Checks& checks, TestDevice& dev) {
  const int64_t in = 8, rows = 8, out = 4096;
  Gemm gemm(dev.stream, dev.arena, size_t(32) << 20);
  std::vector<float> x(size_t(rows * in), 0.0f);
  for (int64_t r = 0; r < rows; ++r) x[size_t(r * in + r)] = 1.0f;
  auto w = random_bf16_values(size_t(out * in), -3.5f, 3.5f);
  std::vector<float> bias(size_t(out), 0.0f);
  DeviceArray<uint16_t> d_x(to_bf16(x)), d_w(to_bf16(w)), d_b(to_bf16(bias)), d_y(size_t(rows * out)),
      d_pre(size_t(rows * out));
  gemm.linear_forward_gelu(bf(d_x), bf(d_w), bf(d_b), bf(d_y), bf(d_pre), rows, in, out);
  const auto y = d_y.download();
  size_t tanh_equal = 0, erf_equal = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const double v = w[size_t(o * in + r)];
      const uint16_t got = y[size_t(r * out + o)];
      tanh_equal += got == to_bf16(float(gelu_ref(v)));
      erf_equal += got == to_bf16(float(gelu_erf_ref(v)));
    }
  checks.record("gemm GeLU epilogue is the tanh form (kernels-ref's)", tanh_equal > erf_equal,
                "bf16 outputs equal to the tanh form's " + std::to_string(tanh_equal) + ", to the erf form's " +
                    std::to_string(erf_equal) + ", of " + std::to_string(rows * out));
}

void check_column_sum(Checks& checks, TestDevice& dev, int64_t rows, int64_t cols) {
  auto x = random_bf16_values(size_t(rows * cols));
  auto acc0 = random_values(size_t(cols));
  DeviceArray<uint16_t> d_x(to_bf16(x));
  DeviceArray<float> d_acc(acc0);
  column_sum_accumulate(bf(d_x), rows, cols, d_acc.get(), dev.ctx);
  std::vector<double> ref(acc0.begin(), acc0.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) ref[size_t(c)] += x[size_t(r * cols + c)];
  checks.close("column sum (bias gradient) " + shape_name({rows, cols}), widen(d_acc.download()), ref, kFp32);
}

// An FP8 copy that Adam wrote (copy, `offset` bytes in) against the host's conversion of the
// values it holds: the same bytes, their amax, and 1 / scale.
void check_fp8_update_copy(Checks& checks, const std::string& name, const std::vector<float>& values, float scale,
                           const std::vector<uint8_t>& copy, size_t offset, float amax, float scale_inv) {
  size_t mismatched = 0;
  float want_amax = 0.0f;
  for (size_t i = 0; i < values.size(); ++i) {
    mismatched += copy[i + offset] != __nv_cvt_float_to_fp8(values[i] * scale, __NV_SATFINITE, __NV_E4M3);
    want_amax = std::fmax(want_amax, std::fabs(values[i]));
  }
  checks.record(name + " bytes", mismatched == 0,
                std::to_string(mismatched) + " of " + std::to_string(values.size()) + " differ from the host's E4M3");
  checks.record(name + " amax and scale inverse", amax == want_amax && scale_inv == 1.0f / scale,
                "amax " + std::to_string(amax) + " (want " + std::to_string(want_amax) + "), scale inverse " +
                    std::to_string(scale_inv));
}

void check_adam_and_norm(Checks& checks, TestDevice& dev) {
  // The last tensor starts one element past an aligned address, as a view into a contiguous
  // buffer may: Adam's 16-byte accesses must fall back for it.
  const std::vector<int64_t> sizes{1, 1000, kChunkElements + 17, 3 * kChunkElements - 5, kChunkElements + 3};
  const auto misalign = [&](size_t t) { return t == 4 ? size_t{1} : size_t{0}; };
  const auto padded = [&](size_t t, std::vector<float> values) {
    values.insert(values.begin(), misalign(t), 0.0f);
    return values;
  };
  const auto unpadded = [&](size_t t, std::vector<float> values) {
    values.erase(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(misalign(t)));
    return values;
  };
  const AdamHyper hyper{1e-3f, 0.9f, 0.95f, 1e-8f, 0.5f, float(1 - std::pow(0.9, 3)), float(1 - std::pow(0.95, 3))};
  std::vector<std::unique_ptr<DeviceArray<float>>> p, g, m, v;
  std::vector<std::unique_ptr<DeviceArray<uint16_t>>> w;
  std::vector<std::vector<float>> hp, hg, hm, hv;
  std::vector<AdamTensor> adam;
  // FP8 copies (fp8_update_copy.hpp) of tensors 1, 3 and 4: 16-byte and scalar paths, and a
  // scale under which the largest values saturate.
  const auto has_fp8 = [](size_t t) { return t == 1 || t == 3 || t == 4; };
  constexpr float kFp8Scale = 600.0f;
  std::vector<std::unique_ptr<DeviceArray<uint8_t>>> f8;
  std::vector<std::unique_ptr<DeviceArray<float>>> f8_scale, f8_amax, f8_scale_inv;
  std::vector<SquareSumTensor> squares;
  double square_sum = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const size_t n = size_t(sizes[t]);
    hp.push_back(random_values(n));
    hg.push_back(random_values(n, -0.1f, 0.1f));
    hm.push_back(random_values(n, -0.01f, 0.01f));
    hv.push_back(random_values(n, 0.0f, 1e-3f));
    p.push_back(std::make_unique<DeviceArray<float>>(padded(t, hp.back())));
    g.push_back(std::make_unique<DeviceArray<float>>(padded(t, hg.back())));
    m.push_back(std::make_unique<DeviceArray<float>>(padded(t, hm.back())));
    v.push_back(std::make_unique<DeviceArray<float>>(padded(t, hv.back())));
    w.push_back(std::make_unique<DeviceArray<uint16_t>>(n + misalign(t)));
    w.back()->poison();
    const bool has_working = t % 2 == 1 || t == 4;
    const size_t o = misalign(t);
    f8.push_back(std::make_unique<DeviceArray<uint8_t>>(n + o));
    f8.back()->poison();
    f8_scale.push_back(std::make_unique<DeviceArray<float>>(std::vector<float>{kFp8Scale}));
    f8_amax.push_back(std::make_unique<DeviceArray<float>>(std::vector<float>{1e30f}));  // the step zeroes it
    f8_scale_inv.push_back(std::make_unique<DeviceArray<float>>(1));
    adam.push_back(AdamTensor{p.back()->get() + o, g.back()->get() + o, m.back()->get() + o, v.back()->get() + o,
                              has_working ? reinterpret_cast<act_t*>(w.back()->get() + o) : nullptr,
                              has_fp8(t) ? reinterpret_cast<__nv_fp8_storage_t*>(f8.back()->get() + o) : nullptr,
                              f8_scale.back()->get(), f8_amax.back()->get(), f8_scale_inv.back()->get(), int64_t(n),
                              t >= 2 ? 0.1f : 0.0f});
    squares.push_back(SquareSumTensor{g.back()->get() + o, int64_t(n)});
    for (float x : hg.back()) square_sum += double(x) * x;
  }
  // Sum of squares first: Adam leaves the gradients alone, but order it before anyway.
  const MultiTensorMetadata sq_meta = pack_multi_tensor(squares);
  DeviceArray<uint8_t> d_sq_meta(sq_meta.bytes);
  DeviceArray<double> d_sum(1);
  sum_of_squares(d_sq_meta.get(), sq_meta.chunks_offset, sq_meta.chunk_count, d_sum.get(), dev.ctx);
  checks.close("grad norm sum of squares (4 tensors, multi-tensor)", d_sum.download(), {square_sum}, 1e-10);

  const MultiTensorMetadata meta = pack_multi_tensor(adam);
  DeviceArray<uint8_t> d_meta(meta.bytes);
  adam_step(d_meta.get(), meta.chunks_offset, meta.chunk_count, int(adam.size()), 3, hyper, dev.ctx);
  for (size_t t = 0; t < sizes.size(); ++t) {
    const size_t n = size_t(sizes[t]);
    // The new moment and parameter are sums whose terms may nearly cancel (in a one-element
    // tensor, the whole norm): their fp32 rounding is measured against the terms' magnitudes.
    std::vector<double> rp(n), rm(n), rv(n), m_terms(n), p_terms(n);
    for (size_t i = 0; i < n; ++i) {
      const double grad = double(hg[t][i]) * hyper.grad_scale;
      rm[i] = 0.9 * hm[t][i] + 0.1 * grad;
      m_terms[i] = std::abs(0.9 * hm[t][i]) + std::abs(0.1 * grad);
      rv[i] = 0.95 * hv[t][i] + 0.05 * grad * grad;
      const double update = (rm[i] / hyper.bias_correction1) / (std::sqrt(rv[i] / hyper.bias_correction2) + 1e-8);
      rp[i] = hp[t][i] - 1e-3 * (update + adam[t].weight_decay * hp[t][i]);
      p_terms[i] = std::abs(hp[t][i]) + 1e-3 * std::abs(update + adam[t].weight_decay * hp[t][i]);
    }
    const std::string name = " tensor " + std::to_string(t) + " (" + std::to_string(n) + " elements" +
                             (adam[t].weight_decay > 0 ? ", decayed" : "") + ")";
    const auto got_p = unpadded(t, p[t]->download());
    checks.close_at_scale("adam param" + name, widen(got_p), rp, p_terms, 1e-6);
    checks.close_at_scale("adam exp_avg" + name, widen(unpadded(t, m[t]->download())), rm, m_terms, 1e-6);
    checks.close("adam exp_avg_sq" + name, widen(unpadded(t, v[t]->download())), rv, 1e-6);
    if (adam[t].working) {
      auto got_w = w[t]->download();
      got_w.erase(got_w.begin(), got_w.begin() + static_cast<std::ptrdiff_t>(misalign(t)));
      size_t mismatched = 0;
      for (size_t i = 0; i < n; ++i) mismatched += got_w[i] != to_bf16(got_p[i]);
      checks.record("adam bf16 working copy" + name, mismatched == 0,
                    std::to_string(mismatched) + " elements differ from the rounded master");
    }
    if (has_fp8(t)) check_fp8_update_copy(checks, "adam FP8 copy" + name, got_p, kFp8Scale, f8[t]->download(),
                                          misalign(t), f8_amax[t]->download()[0], f8_scale_inv[t]->download()[0]);
  }

  // A step whose gradient norm is not finite changes no value and still writes the FP8 copies, of
  // the values as they are, under the scales given now.
  std::vector<std::vector<float>> before;
  for (size_t t = 0; t < sizes.size(); ++t) {
    before.push_back(p[t]->download());
    f8[t]->poison();
    f8_scale[t]->upload({kFp8Scale / 4});
  }
  DeviceArray<float> inf_sum(std::vector<float>{INFINITY});
  AdamHyper skipped = hyper;
  skipped.grad_sum_squares = inf_sum.get();
  skipped.max_grad_norm = 1.0f;
  adam_step(d_meta.get(), meta.chunks_offset, meta.chunk_count, int(adam.size()), 3, skipped, dev.ctx);
  for (size_t t = 0; t < sizes.size(); ++t) {
    const std::string name = " tensor " + std::to_string(t) + ", gradient norm not finite";
    checks.record("adam values" + name, p[t]->download() == before[t], "a value changed");
    if (has_fp8(t))
      check_fp8_update_copy(checks, "adam FP8 copy" + name, unpadded(t, before[t]), kFp8Scale / 4, f8[t]->download(),
                            misalign(t), f8_amax[t]->download()[0], f8_scale_inv[t]->download()[0]);
  }

  std::vector<CastTensor> casts;
  for (size_t t = 0; t < sizes.size(); ++t) {
    w[t]->poison();
    casts.push_back(CastTensor{p[t]->get() + misalign(t), reinterpret_cast<act_t*>(w[t]->get() + misalign(t)), sizes[t], nullptr});
  }
  const MultiTensorMetadata cast_meta = pack_multi_tensor(casts);
  DeviceArray<uint8_t> d_cast_meta(cast_meta.bytes);
  refresh_working_copies(d_cast_meta.get(), cast_meta.chunks_offset, cast_meta.chunk_count, dev.ctx);
  size_t mismatched = 0, total = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    const auto master = unpadded(t, p[t]->download());
    const auto copy = w[t]->download();
    for (size_t i = 0; i < master.size(); ++i) mismatched += copy[i + misalign(t)] != to_bf16(master[i]);
    total += master.size();
  }
  checks.record("working copy refresh (multi-tensor)", mismatched == 0,
                std::to_string(mismatched) + " of " + std::to_string(total) + " elements differ from the rounded master");
}

}  // namespace

void register_kernel_checks() {
  // Each check's arguments are copied into it: the tests run after this returns.
  const auto add = [](const std::string& name, DeviceCheck body) { add_device_check("Kernels", name, std::move(body)); };
  // The last shape has more rows than the forward's grid is high, so threads walk rows in pairs
  // and some end on a single row.
  for (auto [r, c] : {std::pair<int64_t, int64_t>{64, 256}, {37, 100}, {5, 8}, {33, 1000}, {4097, 2048}})
    add("bias_gelu " + shape_name({r, c}), [r, c](Checks& checks, TestDevice& dev) { check_bias_gelu(checks, dev, r, c); });
  const auto dropout = [](float p) { return " dropout " + std::to_string(int(p * 100 + 0.5f)) + "%"; };
  for (auto [s, b, h, p] : {std::tuple<int, int, int, float>{32, 4, 64, 0.0f}, {13, 3, 100, 0.0f}, {32, 4, 64, 0.1f},
                            {13, 3, 100, 0.1f}, {256, 8, 1024, 0.3f}})
    add("bias_dropout_add " + shape_name({s, b, h}) + dropout(p),
        [s, b, h, p](Checks& checks, TestDevice& dev) { check_bias_dropout_add(checks, dev, s, b, h, p); });
  for (float p : {0.0f, 0.1f})
    for (auto [s, b, h] : {std::tuple<int, int, int>{32, 4, 64}, {13, 3, 100}, {512, 2, 2048}})
      add("residual layer_norm " + shape_name({s, b, h}) + dropout(p),
          [s, b, h, p](Checks& checks, TestDevice& dev) { check_residual_layer_norm(checks, dev, s, b, h, p); });
  // Widths for every path of the forward (rows held in registers, 1 to 16 vectors a lane, or read
  // in a loop) and of the one-launch backward (8- and 1-wide vectors, one and two per thread),
  // and more rows than resident blocks.
  for (auto [r, c] : {std::pair<int64_t, int64_t>{16, 64}, {37, 100}, {64, 2048}, {3, 4104}, {5, 7}, {40, 12288},
                      {9, 1500}, {2000, 1024}, {7, 256}, {11, 768}, {6, 4096}})
    for (bool fused : {true, false})
      for (bool residual_sum : {false, true})
        add(std::string("layer_norm ") + shape_name({r, c}) + (fused ? " fused" : "") + (residual_sum ? " residual_sum" : ""),
            [r, c, fused, residual_sum](Checks& checks, TestDevice& dev) {
              check_layer_norm(checks, dev, r, c, fused, residual_sum);
            });
  for (auto [m, s] : {std::pair<int64_t, int>{6, 64}, {4, 37}, {2, 1000}, {3, 256}, {1, 4104}})
    add("causal softmax " + shape_name({m, s}), [m, s](Checks& checks, TestDevice& dev) { check_causal_softmax(checks, dev, m, s); });
  for (auto [b, h, r, c] : {std::tuple<int, int, int, int>{2, 3, 16, 40}, {2, 2, 9, 37}, {1, 2, 24, 520}})
    add("masked softmax " + shape_name({b, h, r, c}),
        [b, h, r, c](Checks& checks, TestDevice& dev) { check_masked_softmax(checks, dev, b, h, r, c); });
  add("embedding", [](Checks& checks, TestDevice& dev) { check_embedding(checks, dev, 16, 2, 64, 0, 50); });
  add("embedding vocabulary shard", [](Checks& checks, TestDevice& dev) { check_embedding(checks, dev, 9, 3, 36, 40, 40); });
  for (auto [r, v, padded, shards] : {std::tuple<int64_t, int64_t, int64_t, int>{64, 1000, 1000, 1}, {37, 97, 100, 1},
                                      {37, 97, 100, 2}, {20, 1000, 1024, 4}, {24, 51200, 51200, 1}, {5, 50257, 50304, 1},
                                      {3, 100003, 100008, 1}})
    add("cross_entropy " + shape_name({r, v, padded}) + " shards " + std::to_string(shards),
        [r, v, padded, shards](Checks& checks, TestDevice& dev) { check_cross_entropy(checks, dev, r, v, padded, shards); });
  for (auto [r, i, o] : {std::tuple<int64_t, int64_t, int64_t>{64, 128, 96}, {37, 72, 100}, {13, 24, 40}, {256, 512, 1536}})
    for (bool bias : {false, true})
      for (bool autotune : {false, true})
        add(std::string("gemm ") + shape_name({r, i, o}) + (bias ? " bias" : "") + (autotune ? " autotune" : ""),
            [r, i, o, bias, autotune](Checks& checks, TestDevice& dev) { check_gemm(checks, dev, r, i, o, bias, autotune); });
  for (auto [r, i, o] : {std::tuple<int64_t, int64_t, int64_t>{64, 128, 96}, {37, 72, 104}, {256, 512, 1536}})
    for (bool autotune : {false, true})
      add(std::string("gemm epilogues ") + shape_name({r, i, o}) + (autotune ? " autotune" : ""),
          [r, i, o, autotune](Checks& checks, TestDevice& dev) { check_gemm_epilogues(checks, dev, r, i, o, autotune); });
  add("gemm GeLU epilogue formula", [](Checks& checks, TestDevice& dev) { check_gelu_epilogue_formula(checks, dev); });
  // Tails of every kind: rows not a multiple of the warps' stride, fewer rows than warps, a last
  // column tile part full, 1-wide vectors, and the bias shapes of the 1.3B model's blocks.
  for (auto [r, c] : {std::pair<int64_t, int64_t>{300, 192}, {17, 30}, {5, 7}, {129, 8200}, {1000, 6144},
                      {4096, 2048}, {2051, 8192}})
    add("column sum " + shape_name({r, c}), [r, c](Checks& checks, TestDevice& dev) { check_column_sum(checks, dev, r, c); });
  add("adam and grad norm", [](Checks& checks, TestDevice& dev) { check_adam_and_norm(checks, dev); });
}

}  // namespace ptdp::fused::test
