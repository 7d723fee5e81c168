// Mutated manifests: each one loads, or is refused in one line that names the file, and the
// manifest on disk is never changed. Every case goes through the loader (keys, types, ranges,
// rules between keys); every tenth also through `ptdp-host validate`, which loads the plugins,
// verifies the schedule and reads the data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "file_bytes.hpp"
#include "fuzz_manifest.hpp"
#include "manifest/manifest_loader.hpp"
#include "mutations.hpp"
#include "ptdp/error.hpp"
#include "refusal_line.hpp"
#include "support/host_command.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

constexpr int kCases = 400;
constexpr uint64_t kSeed = 34;

// Every table, so that mutations reach every kind of key.
std::string base_manifest() {
  return fuzz::fuzz_manifest(R"([run]
steps = 2
seed = 7
[optimizer]
lr = 1e-3
min_lr = 1e-4
warmup_steps = 1
[precision]
params = "fp32"
[checkpoint]
dir = ""
)");
}

TEST(ManifestFuzz, MutatedManifestsLoadOrAreRefusedInOneLineNamingTheFile) {
  test::TempDir dir("ptdp-manifest-fuzz");
  std::ofstream(dir.path() / "corpus.txt") << std::string(2000, 'a');
  const std::string base = base_manifest();
  fuzz::Mutator mutate(kSeed);
  int refused = 0;
  for (int i = 0; i < kCases; ++i) {
    const std::string label = "case " + std::to_string(i);
    const std::string text = mutate.bytes(base);
    const std::filesystem::path path = dir.path() / ("case-" + std::to_string(i) + ".toml");
    std::ofstream(path, std::ios::binary) << text;
    try {
      load_manifest(path.string(), {});
    } catch (const Error& e) {
      ++refused;
      fuzz::expect_clean_refusal(e.what(), path.string(), label);
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": not a refusal but " << e.what();
    }
    if (i % 10 == 0) {
      const auto validate = test::run_host_command(PTDP_TEST_HOST, "validate " + test::quoted(path.string()));
      EXPECT_TRUE(validate.exit_code == 0 || validate.exit_code == 2) << label << ": exit " << validate.exit_code
                                                                      << "\n" << validate.output.substr(0, 2000);
      if (validate.exit_code == 2) {
        ASSERT_FALSE(validate.output.empty()) << label;
        fuzz::expect_clean_refusal(validate.output.substr(0, validate.output.size() - 1), path.string(), label);
      }
    }
    EXPECT_EQ(fuzz::read_file(path), text) << label << ": the manifest was changed";
    std::filesystem::remove(path);
  }
  // The mutations reach the checks past the parser, not only the parser.
  EXPECT_GT(refused, kCases / 4);
  EXPECT_LT(refused, kCases);
}

}  // namespace
}  // namespace ptdp
