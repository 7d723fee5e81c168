#include "data/output_guard.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <ptdp/error.hpp>

namespace ptdp {

namespace fs = std::filesystem;

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

void refuse_output_that_is_an_input(const std::string& out, const std::vector<std::string>& inputs) {
  for (const std::string& input : inputs)
    if (same_file(out, input))
      throw Error(fmt::format("{}: is also an input ({}): writing it would replace what is read; give another file",
                              out, input));
}

void refuse_folder_as_file(const std::string& out) {
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw Error(fmt::format("{}: is a folder; give the file to write", out));
}

void refuse_unwritable_file(const std::string& out, const std::string& what) {
  refuse_folder_as_file(out);
  // Opening it for writing is the only sure test (permission bits do not tell for root, read-only
  // mounts or ACLs). O_NONBLOCK: a FIFO with no reader fails at once instead of waiting. Nothing
  // is truncated, and a file this test created is removed again.
  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(out, ec));
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("{} {}: cannot write it: {}", what, out, std::strerror(errno)));
  ::close(fd);
  if (!existed) ::unlink(out.c_str());
}

void refuse_folder_in_use(const std::string& dir, const std::string& protected_dir) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(dir, ec), source = fs::weakly_canonical(protected_dir, ec);
  if (!ec) {
    // Inside the source folder (or the folder itself): its own files are what is read.
    const auto [end, _] = std::mismatch(source.begin(), source.end(), target.begin(), target.end());
    if (end == source.end())
      throw Error(fmt::format("{}: lies in {}, the folder being read; write somewhere else", dir, protected_dir));
  }
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: is a file, not a folder", dir));
  std::vector<std::string> held;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (held.size() == 3) {
      held.push_back("...");
      break;
    }
    held.push_back(entry.path().filename().string());
  }
  if (!held.empty())
    throw Error(fmt::format("{}: already holds {}; write into a new or empty folder, so that nothing in it is replaced",
                            dir, fmt::join(held, ", ")));
}

TemporaryFile::~TemporaryFile() {
  if (kept_) return;
  std::error_code ec;
  fs::remove(path_, ec);
}

}  // namespace ptdp
