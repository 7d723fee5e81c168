#include "layer_norm.hpp"

#include <cmath>

namespace ptdp::kref {

void layer_norm_forward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                        const float* bias, int64_t n, int64_t c, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    const float* x = in + i * c;
    double sum = 0.0;
    for (int64_t j = 0; j < c; ++j) sum += x[j];
    const double m = sum / c;
    double var = 0.0;
    for (int64_t j = 0; j < c; ++j) var += (x[j] - m) * (x[j] - m);
    const float s = static_cast<float>(1.0 / std::sqrt(var / c + eps));
    const float mf = static_cast<float>(m);
    float* y = out + i * c;
    for (int64_t j = 0; j < c; ++j) y[j] = (x[j] - mf) * s * weight[j] + bias[j];
    mean[i] = mf;
    rstd[i] = s;
  }
}

void layer_norm_backward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                         const float* weight, const float* mean, const float* rstd, int64_t n, int64_t c) {
  layer_norm_backward_input(din, dout, in, weight, mean, rstd, n, c);
  layer_norm_backward_weight(dweight, dbias, dout, in, mean, rstd, n, c);
}

void layer_norm_backward_input(float* din, const float* dout, const float* in, const float* weight, const float* mean,
                               const float* rstd, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const float* x = in + i * c;
    const float* dy = dout + i * c;
    // With xhat the normalized input and g = dy * weight:
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    double g_mean = 0.0, gx_mean = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (x[j] - mean[i]) * rstd[i];
      const float g = dy[j] * weight[j];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean /= c;
    gx_mean /= c;
    float* dx = din + i * c;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (x[j] - mean[i]) * rstd[i];
      const float g = dy[j] * weight[j];
      dx[j] += rstd[i] * (g - static_cast<float>(g_mean) - xhat * static_cast<float>(gx_mean));
    }
  }
}

void layer_norm_backward_weight(float* dweight, float* dbias, const float* dout, const float* in, const float* mean,
                                const float* rstd, int64_t n, int64_t c) {
  for (int64_t i = 0; i < n; ++i) {
    const float* x = in + i * c;
    const float* dy = dout + i * c;
    for (int64_t j = 0; j < c; ++j) {
      const float xhat = (x[j] - mean[i]) * rstd[i];
      dbias[j] += dy[j];
      dweight[j] += dy[j] * xhat;
    }
  }
}

}  // namespace ptdp::kref
