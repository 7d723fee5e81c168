#include "support/temp_dir.hpp"

#include <cstdlib>
#include <system_error>

#include <ptdp/error.hpp>

namespace ptdp::test {

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) throw Error("cannot create a temporary folder from " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace ptdp::test
