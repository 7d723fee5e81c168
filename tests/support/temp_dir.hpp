#pragma once
// A fresh folder under the system's temporary directory, removed with everything in it when
// the object goes away.
#include <filesystem>
#include <string>

namespace ptdp::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ptdp-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ptdp::test
