#include "checkpoint/safetensors_reader.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <ptdp/error.hpp>
#include <ptdp/message_text.hpp>

namespace ptdp {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;

}  // namespace

std::map<std::string, NamedF32Tensor> read_safetensors(const std::string& path) {
  auto fail = [&](const std::string& reason) { throw Error(path + ": " + reason); };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(std::filesystem::exists(path, ec) ? "not a regular file" : "no such file");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(std::string("cannot open: ") + std::strerror(errno));
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t length = 0;
  if (size < 8 || !in.read(reinterpret_cast<char*>(&length), 8)) fail("too short for a safetensors file");
  if (length > kMaxHeaderBytes || 8 + length > size)
    fail("bad header length " + std::to_string(length) + " for a file of " + std::to_string(size) + " bytes");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  const nlohmann::json header = nlohmann::json::parse(text, nullptr, false);
  if (!header.is_object()) fail("the header is not a JSON object");
  const uint64_t data_size = size - 8 - length;
  std::map<std::string, NamedF32Tensor> out;
  std::map<uint64_t, std::pair<uint64_t, std::string>> ranges;  // begin -> end, tensor
  try {
    for (const auto& [key, entry] : header.items()) {
      if (key == "__metadata__") continue;
      const std::string name = excerpt(key);
      const std::string dtype = entry.at("dtype").get<std::string>();
      if (dtype != "F32") fail("tensor '" + name + "' is " + excerpt(dtype) + ": only F32 is read (convert the model first)");
      NamedF32Tensor t{key, entry.at("shape").get<std::vector<int64_t>>(), {}};
      const auto range = entry.at("data_offsets").get<std::vector<uint64_t>>();
      uint64_t elements = 1;
      for (int64_t d : t.shape) {
        if (d < 0 || (d > 0 && elements > data_size / static_cast<uint64_t>(d))) fail("tensor '" + name + "' has a bad shape");
        elements *= static_cast<uint64_t>(d);
      }
      if (range.size() != 2 || range[0] > range[1] || range[1] > data_size || range[1] - range[0] != 4 * elements)
        fail("tensor '" + name + "' has data_offsets that do not hold its shape inside the file");
      if (range[1] > range[0]) ranges[range[0]] = {range[1], name};
      t.values.resize(elements);
      in.seekg(static_cast<std::streamoff>(8 + length + range[0]));
      if (!in.read(reinterpret_cast<char*>(t.values.data()), static_cast<std::streamsize>(4 * elements)))
        fail("cannot read tensor '" + name + "'");
      out.emplace(key, std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    fail("bad header: " + json_reason(e.what()));
  }
  // Each tensor's bytes are its own: two tensors sharing bytes are no safetensors file.
  uint64_t end = 0;
  std::string previous;
  for (const auto& [begin, tensor] : ranges) {
    if (begin < end) fail("tensors '" + previous + "' and '" + tensor.second + "' overlap in the file's data");
    end = tensor.first;
    previous = tensor.second;
  }
  return out;
}

}  // namespace ptdp
