#pragma once
// GeLU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
// x · sigmoid(2u) with u = sqrt(2/pi) (x + 0.044715 x^3), since 0.5 (1 + tanh u) = sigmoid(2u):
// one exponential and one division where tanhf takes a branch and a dozen instructions. The FP8
// casts that compute the GeLU as they read (fp8_cast.cu) were bound by that arithmetic, not by
// memory (kernels-fused-fp8-cast-bandwidth, BENCHMARKS.md 2026-12-06). The results differ from
// tanhf's in the last bits of fp32, below what act_t keeps; every kernel of the plugin takes GeLU
// from here, so they agree with one another bit for bit.
namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

// sigmoid(2u); for u far below zero the exponential is infinite and the quotient 0.
__device__ __forceinline__ float gelu_sigmoid(float x) {
  const float u = kGeluC * (x + kGeluA * x * x * x);
  return __fdividef(1.0f, 1.0f + __expf(-2.0f * u));
}

__device__ __forceinline__ float gelu(float x) { return x * gelu_sigmoid(x); }

// d/dx [x · s(x)] with s = sigmoid(2u): s + 2 x s (1 − s) u'. (tanh's form: 1 − t² = 4 s (1 − s).)
__device__ __forceinline__ float gelu_grad(float x) {
  const float s = gelu_sigmoid(x);
  return s + 2.0f * x * s * (1.0f - s) * kGeluC * (1.0f + 3.0f * kGeluA * x * x);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
