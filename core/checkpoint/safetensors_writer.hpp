#pragma once
// Writes fp32 tensors as one safetensors file (an 8-byte little-endian header length, a JSON
// header with each tensor's dtype, shape and data_offsets, then the bytes, 8-byte aligned), the
// format `safetensors` and `transformers` load. Written to PATH.tmp and renamed, so a file at
// PATH is always whole.
#include <string>
#include <vector>

#include <cstdint>

namespace ptdp {

struct NamedF32Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major
};

void write_safetensors(const std::string& path, const std::vector<NamedF32Tensor>& tensors);

}  // namespace ptdp
