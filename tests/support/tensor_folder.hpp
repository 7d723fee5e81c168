#pragma once
// A folder of named tensors that other programs (the PyTorch oracle) read and write:
// index.json {"meta": {...}, "tensors": {name: {"dtype": "f32"|"f64"|"i32", "shape": [...],
// "offset": bytes into data.bin}}} and data.bin, little-endian, row-major.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/shard.hpp"

namespace ptdp::test {

class TensorFolderWriter {
 public:
  void add(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& values);
  void add(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int32_t>& values);
  nlohmann::json& meta() { return meta_; }
  void write(const std::filesystem::path& dir) const;

 private:
  void add_bytes(const std::string& name, const char* dtype, const std::vector<int64_t>& shape,
                 const void* data, size_t bytes);
  nlohmann::json meta_ = nlohmann::json::object();
  nlohmann::json index_ = nlohmann::json::object();
  std::vector<uint8_t> data_;
};

// Every tensor of the folder, converted to float (f64 and i32 included). Throws ptdp::Error
// naming the file on anything missing or malformed.
TensorMap read_tensor_folder(const std::filesystem::path& dir);

}  // namespace ptdp::test
