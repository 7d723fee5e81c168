#include "attention.hpp"

#include <cblas.h>

#include <cmath>
#include <vector>

namespace ptdp::kref {

namespace {

// Where the q, k or v block of one (sequence j, head a) starts, and the stride between positions.
struct HeadView {
  int64_t q, k, v;  // element offsets into a [s, b, 3 * width] buffer
  int64_t ld;       // between consecutive positions
};

HeadView head_view(const AttentionShape& sh, int64_t j, int64_t a) {
  const int64_t row = 3 * sh.width();
  const int64_t base = j * row + a * sh.head_dim;
  return HeadView{base, base + sh.width(), base + 2 * sh.width(), sh.batch * row};
}

}  // namespace

void attention_forward(float* y, float* probs, const float* qkv, const AttentionShape& sh) {
  const int64_t s = sh.seq, hd = sh.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t ldy = sh.batch * sh.width();
  for (int64_t j = 0; j < sh.batch; ++j) {
    for (int64_t a = 0; a < sh.heads; ++a) {
      const HeadView hv = head_view(sh, j, a);
      float* p = probs + (j * sh.heads + a) * s * s;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, hd, scale, qkv + hv.q, hv.ld,
                  qkv + hv.k, hv.ld, 0.0f, p, s);
      for (int64_t t = 0; t < s; ++t) {  // causal softmax of row t over positions 0..t
        float* row = p + t * s;
        float max = row[0];
        for (int64_t u = 1; u <= t; ++u) max = std::fmax(max, row[u]);
        float sum = 0.0f;
        for (int64_t u = 0; u <= t; ++u) {
          row[u] = std::exp(row[u] - max);
          sum += row[u];
        }
        const float inv = 1.0f / sum;
        for (int64_t u = 0; u <= t; ++u) row[u] *= inv;
        for (int64_t u = t + 1; u < s; ++u) row[u] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, hd, s, 1.0f, p, s, qkv + hv.v, hv.ld,
                  0.0f, y + j * sh.width() + a * hd, ldy);
    }
  }
}

void attention_backward(float* dqkv, const float* dy, const float* qkv, const float* probs,
                        const AttentionShape& sh) {
  const int64_t s = sh.seq, hd = sh.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t ldy = sh.batch * sh.width();
  std::vector<float> dscores(static_cast<size_t>(s * s));
  for (int64_t j = 0; j < sh.batch; ++j) {
    for (int64_t a = 0; a < sh.heads; ++a) {
      const HeadView hv = head_view(sh, j, a);
      const float* p = probs + (j * sh.heads + a) * s * s;
      const float* dyb = dy + j * sh.width() + a * hd;
      float* ds = dscores.data();
      // dP = dY V^T, dV = P^T dY
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, hd, 1.0f, dyb, ldy, qkv + hv.v, hv.ld,
                  0.0f, ds, s);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, hd, s, 1.0f, p, s, dyb, ldy, 0.0f,
                  dqkv + hv.v, hv.ld);
      // Softmax backward, row by row: dS = P * (dP - sum(P * dP)); zero where P is masked.
      for (int64_t t = 0; t < s; ++t) {
        const float* prow = p + t * s;
        float* drow = ds + t * s;
        float dot = 0.0f;
        for (int64_t u = 0; u <= t; ++u) dot += prow[u] * drow[u];
        for (int64_t u = 0; u <= t; ++u) drow[u] = prow[u] * (drow[u] - dot);
        for (int64_t u = t + 1; u < s; ++u) drow[u] = 0.0f;
      }
      // S = scale Q K^T: dQ = scale dS K, dK = scale dS^T Q
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, hd, s, scale, ds, s, qkv + hv.k, hv.ld,
                  0.0f, dqkv + hv.q, hv.ld);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, hd, s, scale, ds, s, qkv + hv.q, hv.ld,
                  0.0f, dqkv + hv.k, hv.ld);
    }
  }
}

}  // namespace ptdp::kref
