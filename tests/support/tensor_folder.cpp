#include "support/tensor_folder.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include <ptdp/error.hpp>

namespace ptdp::test {

void TensorFolderWriter::add(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<float>& values) {
  add_bytes(name, "f32", shape, values.data(), values.size() * sizeof(float));
}

void TensorFolderWriter::add(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<int32_t>& values) {
  add_bytes(name, "i32", shape, values.data(), values.size() * sizeof(int32_t));
}

void TensorFolderWriter::add_bytes(const std::string& name, const char* dtype, const std::vector<int64_t>& shape,
                                   const void* data, size_t bytes) {
  if (static_cast<size_t>(element_count(shape)) * 4 != bytes)
    throw Error("tensor folder: " + name + " has " + std::to_string(bytes) + " bytes for shape " + shape_string(shape));
  index_[name] = {{"dtype", dtype}, {"shape", shape}, {"offset", data_.size()}};
  const auto* p = static_cast<const uint8_t*>(data);
  data_.insert(data_.end(), p, p + bytes);
}

void TensorFolderWriter::write(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  std::ofstream index(dir / "index.json");
  index << nlohmann::json{{"meta", meta_}, {"tensors", index_}}.dump(1);
  std::ofstream data(dir / "data.bin", std::ios::binary);
  data.write(reinterpret_cast<const char*>(data_.data()), static_cast<std::streamsize>(data_.size()));
  if (!index || !data) throw Error("tensor folder " + dir.string() + ": cannot write");
}

TensorMap read_tensor_folder(const std::filesystem::path& dir) {
  std::ifstream index_file(dir / "index.json");
  std::ifstream data_file(dir / "data.bin", std::ios::binary);
  if (!index_file || !data_file) throw Error("tensor folder " + dir.string() + ": index.json or data.bin missing");
  const std::vector<char> data((std::istreambuf_iterator<char>(data_file)), std::istreambuf_iterator<char>());
  TensorMap out;
  try {
    const nlohmann::json index = nlohmann::json::parse(index_file);
    for (const auto& [name, entry] : index.at("tensors").items()) {
      HostTensor t;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      const std::string dtype = entry.at("dtype").get<std::string>();
      const size_t offset = entry.at("offset").get<size_t>();
      const size_t n = static_cast<size_t>(element_count(t.shape));
      const size_t width = dtype == "f64" ? 8 : 4;
      if (dtype != "f32" && dtype != "f64" && dtype != "i32")
        throw Error("tensor " + name + " has unknown dtype " + dtype);
      if (offset + n * width > data.size()) throw Error("tensor " + name + " runs past the end of data.bin");
      t.values.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const char* p = data.data() + offset + i * width;
        if (dtype == "f64") {
          double v;
          std::memcpy(&v, p, 8);
          t.values[i] = static_cast<float>(v);
        } else if (dtype == "i32") {
          int32_t v;
          std::memcpy(&v, p, 4);
          t.values[i] = static_cast<float>(v);
        } else {
          std::memcpy(&t.values[i], p, 4);
        }
      }
      out.emplace(name, std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error("tensor folder " + (dir / "index.json").string() + ": " + e.what());
  } catch (const Error& e) {
    throw Error("tensor folder " + dir.string() + ": " + e.what());
  }
  return out;
}

}  // namespace ptdp::test
