#include "posix_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include <ptdp/error.hpp>

namespace ptdp::ckptfs {

namespace {

[[noreturn]] void fail(const fs::path& path, const std::string& what, int err) {
  throw Error("ckpt-fs: " + path.string() + ": " + what + ": " + std::strerror(err));
}

int open_or_fail(const fs::path& path, int flags, const char* what) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT) throw Error("ckpt-fs: " + path.string() + ": missing file");
    fail(path, what, errno);
  }
  return fd;
}

}  // namespace

PosixFile PosixFile::create(const fs::path& path) {
  return PosixFile(open_or_fail(path, O_RDWR | O_CREAT | O_TRUNC, "cannot create"), path);
}

PosixFile PosixFile::open_read(const fs::path& path) {
  return PosixFile(open_or_fail(path, O_RDONLY, "cannot open"), path);
}

PosixFile::PosixFile(PosixFile&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

PosixFile& PosixFile::operator=(PosixFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

PosixFile::~PosixFile() {
  if (fd_ >= 0) ::close(fd_);
}

uint64_t PosixFile::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(path_, "cannot stat", errno);
  return static_cast<uint64_t>(st.st_size);
}

FileStamp PosixFile::stamp() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(path_, "cannot stat", errno);
  return FileStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                   static_cast<uint64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

void PosixFile::append(const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path_, "cannot write", errno);
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void PosixFile::read_at(void* data, size_t bytes, uint64_t offset) const {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path_, "cannot read", errno);
    }
    if (n == 0)
      throw Error("ckpt-fs: " + path_.string() + ": truncated: ends at byte " +
                  std::to_string(offset) + ", " + std::to_string(bytes) + " more bytes expected");
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void PosixFile::append_file(const PosixFile& source) {
  std::vector<char> buffer(size_t{4} << 20);
  const uint64_t total = source.size();
  for (uint64_t done = 0; done < total;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), total - done));
    source.read_at(buffer.data(), n, done);
    append(buffer.data(), n);
    done += n;
  }
}

void PosixFile::sync() {
  if (::fsync(fd_) != 0) fail(path_, "cannot fsync", errno);
}

void PosixFile::close() {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) fail(path_, "cannot close", errno);
}

void sync_directory(const fs::path& dir) {
  int fd = open_or_fail(dir, O_RDONLY | O_DIRECTORY, "cannot open folder");
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) fail(dir, "cannot fsync folder", err);
}

void write_whole_file(const fs::path& path, const std::string& bytes, bool sync) {
  PosixFile f = PosixFile::create(path);
  f.append(bytes.data(), bytes.size());
  if (sync) f.sync();
  f.close();
}

std::string read_whole_file(const PosixFile& file) {
  std::string bytes(file.size(), '\0');
  file.read_at(bytes.data(), bytes.size(), 0);
  return bytes;
}

void rename_path(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    fail(from, "cannot rename to " + to.string(), errno);
}

}  // namespace ptdp::ckptfs
