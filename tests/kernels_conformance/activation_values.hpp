#pragma once
// Reading and writing a backend's tensors as floats, whatever their dtype (f32, or bf16 or fp16
// rounded to nearest even as the devices round), through the backend's own copies.
#include <cstdint>
#include <vector>

#include <ptdp/layer_kernels.hpp>

namespace ptdp::conformance {

float round_to_bf16(float value);

std::vector<float> read_values(LayerKernels& kernels, const Tensor& t);
void write_values(LayerKernels& kernels, const Tensor& t, const std::vector<float>& values);

}  // namespace ptdp::conformance
