#include "checkpoint/safetensors_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include <ptdp/error.hpp>

#include "data/output_guard.hpp"

namespace ptdp {

void write_safetensors(const std::string& path, const std::vector<NamedF32Tensor>& tensors) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0;
  for (const NamedF32Tensor& t : tensors) {
    const uint64_t bytes = t.values.size() * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t length = text.size();
  TemporaryFile written(path + ".tmp");
  const std::string& tmp = written.path();
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);  // little-endian hosts only
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const NamedF32Tensor& t : tensors)
      out.write(reinterpret_cast<const char*>(t.values.data()), static_cast<std::streamsize>(t.values.size() * 4));
    out.close();
    if (!out) throw Error(path + ": cannot write: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(path + ": cannot rename " + tmp + " into place: " + std::strerror(errno));
  written.keep();
}

}  // namespace ptdp
