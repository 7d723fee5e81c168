#pragma once
// A whole file mapped read-only into memory. Token files can be far larger than what a run
// touches, so they are paged in on demand rather than read.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ptdp {

class MappedFile {
 public:
  // Throws ptdp::Error "<path>: <reason>" when the file cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;  // null for an empty file: mmap refuses zero length
  size_t size_ = 0;
};

}  // namespace ptdp
