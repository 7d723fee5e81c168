#include "activation_values.hpp"

#include "ptdp/float16_bits.hpp"
#include "ptdp/error.hpp"

namespace ptdp::conformance {

namespace {

void expect_float(const Tensor& t) {
  if (t.dtype != DType::F32 && t.dtype != DType::BF16 && t.dtype != DType::F16)
    throw Error(std::string("conformance: cannot read or write a ") + dtype_name(t.dtype) + " tensor as floats");
}

}  // namespace

float round_to_bf16(float value) { return bf16_to_float(float_to_bf16(value)); }

std::vector<float> read_values(LayerKernels& kernels, const Tensor& t) {
  expect_float(t);
  std::vector<float> values(static_cast<size_t>(t.numel()));
  if (t.dtype == DType::F32) {
    kernels.copy_to_host(values.data(), t);
    return values;
  }
  std::vector<uint16_t> bits(values.size());
  kernels.copy_to_host(bits.data(), t);
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = t.dtype == DType::F16 ? f16_to_float(bits[i]) : bf16_to_float(bits[i]);
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
  for (size_t i = 0; i < bits.size(); ++i)
    bits[i] = t.dtype == DType::F16 ? float_to_f16(values[i]) : float_to_bf16(values[i]);
  kernels.copy_from_host(t, bits.data());
}

}  // namespace ptdp::conformance
