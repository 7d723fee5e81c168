#pragma once
// GeLU, tanh approximation (GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#include <cstdint>

namespace ptdp::kref {

void gelu_forward(float* out, const float* in, int64_t n);
// din = dout * gelu'(in)  (overwritten)
void gelu_backward(float* din, const float* in, const float* dout, int64_t n);

}  // namespace ptdp::kref
