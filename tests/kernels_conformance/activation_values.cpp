#include "activation_values.hpp"

#include <cstring>

namespace ptdp::conformance {

namespace {

uint16_t bf16_bits(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16_bits(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void expect_float(const Tensor& t) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16)
    throw Error(std::string("conformance: cannot read or write a ") + dtype_name(t.dtype) + " tensor as floats");
}

}  // namespace

float round_to_bf16(float value) { return from_bf16_bits(bf16_bits(value)); }

std::vector<float> read_values(LayerKernels& kernels, const Tensor& t) {
  expect_float(t);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::F32) {
    kernels.copy_to_host(values.data(), t);
    return values;
  }
  std::vector<uint16_t> bits(values.size());
  kernels.copy_to_host(bits.data(), t);
  for (size_t i = 0; i < bits.size(); ++i) values[i] = from_bf16_bits(bits[i]);
  return values;
}

void write_values(LayerKernels& kernels, const Tensor& t, const std::vector<float>& values) {
  expect_float(t);
  if (values.size() != static_cast<size_t>(t.numel()))
    throw Error("conformance: " + std::to_string(values.size()) + " values for a tensor of " +
                std::to_string(t.numel()));
  if (t.dtype == DType::F32) {
    kernels.copy_from_host(t, values.data());
    return;
  }
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = bf16_bits(values[i]);
  kernels.copy_from_host(t, bits.data());
}

}  // namespace ptdp::conformance
