// plugins.communicator names the communicator; its old name, plugins.comm (and the option table
// plugins.options.comm), still loads with one warning naming the new key, and a manifest that
// gives both names is refused, naming both.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(CommunicatorSlot, TheOldKeyLoadsWithAWarningNamingTheNewOne) {
  const std::string text = edited(kManifest, {{"communicator = \"comm-ucx\"", "comm = \"comm-nccl\""}});
  const RunConfig c = load_manifest_string(text, "t.toml");
  EXPECT_EQ(c.plugins.communicator, "comm-nccl");
  EXPECT_THAT(c.warnings, ElementsAre("t.toml:" + std::to_string(line_of(text, "comm = ")) +
                                      ":1: plugins.comm is deprecated: write plugins.communicator"));
  const RunConfig overridden =
      load_manifest_string(edited(kManifest, {{"communicator = \"comm-ucx\"\n", ""}}), "t.toml", {"plugins.comm=x"});
  EXPECT_EQ(overridden.plugins.communicator, "x");
  EXPECT_THAT(overridden.warnings, ElementsAre("--set plugins.comm=x: plugins.comm is deprecated: write "
                                               "plugins.communicator"));
  EXPECT_TRUE(load_manifest_string(kManifest, "t.toml").warnings.empty());
}

TEST(CommunicatorSlot, TheOldOptionTableLoadsWithAWarningNamingTheNewOne) {
  const std::string text = edited(kManifest, {{"[plugins.options.communicator]", "[plugins.options.comm]"}});
  const RunConfig c = load_manifest_string(text, "t.toml");
  EXPECT_EQ(c.plugins.options.at("communicator")["transports"].value<std::string>(), "shm");
  EXPECT_EQ(c.plugins.options.count("comm"), 0u);
  EXPECT_THAT(c.warnings,
              ElementsAre(AllOf(StartsWith("t.toml:" + std::to_string(line_of(text, "[plugins.options.comm]")) + ":"),
                                EndsWith(": plugins.options.comm is deprecated: write plugins.options.communicator"))));
}

TEST(CommunicatorSlot, BothNamesAreRefusedNamingBoth) {
  const std::string keys =
      edited(kManifest, {{"communicator = \"comm-ucx\"", "communicator = \"comm-ucx\"\ncomm = \"comm-ucx\""}});
  EXPECT_EQ(load_error(keys), "t.toml:" + std::to_string(line_of(keys, "comm = ")) +
                                  ":1: plugins.comm: plugins.communicator names the same slot: keep "
                                  "plugins.communicator and delete plugins.comm, its deprecated name");
  EXPECT_EQ(load_error(kManifest, {"plugins.options.comm.transports=tcp"}),
            "--set plugins.options.comm.transports=tcp: plugins.options.comm: plugins.options.communicator names the "
            "same slot: keep plugins.options.communicator and delete plugins.options.comm, its deprecated name");
}

TEST(CommunicatorSlot, AConfigurationStoredUnderTheOldNameReadsBackUnderTheNewOne) {
  // What checkpoints and metrics headers of earlier runs hold.
  nlohmann::json stored = run_config_json(load_manifest_string(kManifest, "t.toml"));
  stored["plugins"]["comm"] = stored["plugins"]["communicator"];
  stored["plugins"].erase("communicator");
  stored["plugins"]["options"]["comm"] = stored["plugins"]["options"]["communicator"];
  stored["plugins"]["options"].erase("communicator");
  const RunConfig c = load_manifest_string(manifest_text(stored), "stored");
  EXPECT_EQ(c.plugins.communicator, "comm-ucx");
  EXPECT_EQ(c.plugins.options.at("communicator")["transports"].value<std::string>(), "shm");
  EXPECT_TRUE(c.warnings.empty());
}

}  // namespace
}  // namespace ptdp::test
