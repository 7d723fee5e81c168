#include "gelu.hpp"

#include <cmath>

namespace ptdp::kref {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
}  // namespace

void gelu_forward(float* out, const float* in, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = in[i];
    out[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
  }
}

void gelu_backward(float* din, const float* in, const float* dout, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = in[i];
    const float t = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float dt = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x) * (1.0f - t * t);
    din[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * x * dt);
  }
}

}  // namespace ptdp::kref
