// The resolved manifest a checkpoint stores holds every key: written back as a manifest, it
// loads into the same configuration.
#include "manifest/run_config_json.hpp"

#include <gtest/gtest.h>

#include <string>

#include "manifest/manifest_loader.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

// JSON scalars and arrays of strings are TOML values as they are written.
std::string toml_tables(const nlohmann::json& tables, const std::string& prefix) {
  std::string out, nested;
  out += "[" + prefix + "]\n";
  for (const auto& [key, value] : tables.items()) {
    if (value.is_object()) {
      nested += toml_tables(value, prefix + "." + key);
      continue;
    }
    out += key + " = " + value.dump() + "\n";
  }
  return out + nested;
}

TEST(RunConfigJson, WrittenBackAsAManifestItLoadsTheSameConfiguration) {
  const RunConfig original = load_manifest_string(kManifest, "t.toml");
  nlohmann::json resolved = run_config_json(original);
  EXPECT_EQ(resolved["model"]["ffn_hidden"], 4 * original.model.hidden);
  EXPECT_EQ(resolved["model"]["padded_vocab"], original.model.padded_vocab);
  EXPECT_FLOAT_EQ(resolved["model"]["layernorm_eps"].get<float>(), original.model.layernorm_eps);
  EXPECT_EQ(resolved["plugins"]["options"]["comm"]["transports"], "shm");
  // padded_vocab is derived, not a key; everything else must be one.
  nlohmann::json keys = resolved;
  keys["model"].erase("padded_vocab");
  std::string manifest;
  for (const auto& [table, values] : keys.items()) manifest += toml_tables(values, table) + "\n";
  const RunConfig reloaded = load_manifest_string(manifest, "resolved.toml");
  EXPECT_EQ(run_config_json(reloaded), resolved) << manifest;
}

}  // namespace
}  // namespace ptdp::test
