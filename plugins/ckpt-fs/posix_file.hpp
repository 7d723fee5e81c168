#pragma once
// A file descriptor with checked I/O. The durability steps of a commit (fsync of a file, then of
// the folder that names it) need descriptors, which std::fstream does not expose. Every error
// names the file and the system's reason.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace ptdp::ckptfs {

namespace fs = std::filesystem;

// Identity and version of an open file: a cache entry is valid while these match.
struct FileStamp {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

class PosixFile {
 public:
  // Read and write, created empty (an existing file is truncated).
  static PosixFile create(const fs::path& path);
  // Read only; a file that is not there fails with "missing file".
  static PosixFile open_read(const fs::path& path);

  PosixFile(PosixFile&& other) noexcept;
  PosixFile& operator=(PosixFile&& other) noexcept;
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;
  ~PosixFile();

  const fs::path& path() const { return path_; }
  uint64_t size() const;
  FileStamp stamp() const;
  void append(const void* data, size_t bytes);
  // Fails with "truncated" when the file ends before offset + bytes.
  void read_at(void* data, size_t bytes, uint64_t offset) const;
  // Appends everything `source` holds.
  void append_file(const PosixFile& source);
  void sync();
  void close();

 private:
  PosixFile(int fd, fs::path path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  fs::path path_;
};

// Makes the entries of `dir` (a rename, a new file) durable.
void sync_directory(const fs::path& dir);

// Writes `bytes` to `path` (replacing it), optionally fsync'd.
void write_whole_file(const fs::path& path, const std::string& bytes, bool sync);

std::string read_whole_file(const PosixFile& file);

// rename(2) with the error naming both paths.
void rename_path(const fs::path& from, const fs::path& to);

}  // namespace ptdp::ckptfs
