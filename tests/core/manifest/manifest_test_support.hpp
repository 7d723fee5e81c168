#pragma once
// A valid manifest that uses every table, and helpers to break it one line at a time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "manifest/manifest_loader.hpp"

namespace ptdp::test {

// p 2 · t 2 · d 2 = 8 processes; v 2; m = 8 / (1 · 2) = 4; 8 layers = 2 per chunk.
inline const std::string kManifest = R"([run]
name = "test"
steps = 10
seed = 7
log_every = 2

[model]
layers = 8
hidden = 64
heads = 8
seq_len = 32
vocab = 256

[parallel]
tensor = 2
pipeline = 2
data = 2
virtual_stages = 2
micro_batch = 1
global_batch = 8
scatter_gather = true
recompute = "none"

[optimizer]
lr = 1e-3
min_lr = 1e-4
beta2 = 0.95
warmup_steps = 2
decay = "cosine"

[precision]
params = "fp32"

[data]
path = "corpus.txt"
val_fraction = 0.1

[checkpoint]
dir = ""
every = 0

[plugins]
communicator = "comm-ucx"
scheduler = "sched-interleaved"
search_path = ["plugins"]

[plugins.options.communicator]
transports = "shm"

[launch]
nproc_per_node = 8
timeout_s = 30
)";

// `text` with each `from` replaced by its `to` (each must occur).
inline std::string edited(std::string text, const std::vector<std::pair<std::string, std::string>>& edits) {
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "not in the manifest: " << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

// 1-based line of the first occurrence of `needle`.
inline int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << "not in the manifest: " << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

// The message load_manifest_string throws, or a failure when it does not.
inline std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    load_manifest_string(text, "t.toml", overrides);
  } catch (const ManifestError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the manifest was accepted";
  return "";
}

// A fresh folder under the system's temporary directory, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "ptdp-manifest-" + std::to_string(::getpid()) + "-" + test->test_suite_name() + "-" + test->name();
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ptdp::test
