// The resolved manifest a checkpoint stores holds every key: written back as a manifest, it
// loads into the same configuration.
#include "manifest/run_config_json.hpp"

#include <gtest/gtest.h>

#include <string>

#include "manifest/manifest_loader.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

TEST(RunConfigJson, WrittenBackAsAManifestItLoadsTheSameConfiguration) {
  const RunConfig original = load_manifest_string(kManifest, "t.toml");
  nlohmann::json resolved = run_config_json(original);
  EXPECT_EQ(resolved["model"]["ffn_hidden"], 4 * original.model.hidden);
  EXPECT_EQ(resolved["model"]["padded_vocab"], original.model.padded_vocab);
  EXPECT_FLOAT_EQ(resolved["model"]["layernorm_eps"].get<float>(), original.model.layernorm_eps);
  EXPECT_EQ(resolved["plugins"]["options"]["communicator"]["transports"], "shm");
  // padded_vocab is derived, not a key; everything else must be one.
  const std::string manifest = manifest_text(resolved);
  EXPECT_EQ(manifest.find("padded_vocab"), std::string::npos);
  const RunConfig reloaded = load_manifest_string(manifest, "resolved.toml");
  EXPECT_EQ(nlohmann::json(run_config_json(reloaded)), resolved) << manifest;
}

}  // namespace
}  // namespace ptdp::test
