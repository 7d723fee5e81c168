#include "data/token_file_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// Owns "<path>.tmp" until it is renamed into place; removes it on any failure.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& target) : target_(target), path_(target + ".tmp") {
    file_ = std::fopen(path_.c_str(), "wb");
    if (!file_) throw Error(target_ + ": cannot create " + path_ + ": " + std::strerror(errno));
  }
  ~TemporaryFile() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(path_.c_str());
  }
  void write(const void* data, size_t bytes) {
    if (std::fwrite(data, 1, bytes, file_) != bytes)
      throw Error(target_ + ": cannot write " + path_ + ": " + std::strerror(errno));
  }
  void commit() {
    int closed = std::fclose(file_);
    file_ = nullptr;
    if (closed != 0) throw Error(target_ + ": cannot write " + path_ + ": " + std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(path_, target_, ec);
    if (ec) throw Error(target_ + ": cannot rename " + path_ + " into place: " + ec.message());
    committed_ = true;
  }

 private:
  std::string target_, path_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

template <class T>
void narrow(const int32_t* tokens, size_t count, int64_t first_index, TokenDType dtype,
            const std::string& path, std::vector<uint8_t>& out) {
  out.resize(count * sizeof(T));
  int64_t max = token_dtype_max(dtype);
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || tokens[i] > max)
      throw Error(path + ": token " + std::to_string(tokens[i]) + " at index " +
                  std::to_string(first_index + static_cast<int64_t>(i)) + " does not fit dtype " +
                  token_dtype_name(dtype) + " (0.." + std::to_string(max) + ")");
    T value = static_cast<T>(tokens[i]);
    std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
  }
}

}  // namespace

void write_token_file(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype) {
  if (tokens.empty()) throw Error(path + ": no tokens to write");
  TemporaryFile file(path);
  PtdpHeader header{};
  std::memcpy(header.magic, kPtdpMagic, sizeof kPtdpMagic);
  header.version = kPtdpVersion;
  header.dtype = static_cast<uint32_t>(dtype);
  header.count = tokens.size();
  file.write(&header, sizeof header);

  // Converted in chunks so a large file never needs a second full-size copy in memory.
  constexpr size_t kChunk = 1 << 16;
  std::vector<uint8_t> bytes;
  for (size_t first = 0; first < tokens.size(); first += kChunk) {
    size_t n = std::min(kChunk, tokens.size() - first);
    const int32_t* chunk = tokens.data() + first;
    auto index = static_cast<int64_t>(first);
    switch (dtype) {
      case TokenDType::U8: narrow<uint8_t>(chunk, n, index, dtype, path, bytes); break;
      case TokenDType::U16: narrow<uint16_t>(chunk, n, index, dtype, path, bytes); break;
      case TokenDType::I32: narrow<int32_t>(chunk, n, index, dtype, path, bytes); break;
    }
    file.write(bytes.data(), bytes.size());
  }
  file.commit();
}

}  // namespace ptdp
