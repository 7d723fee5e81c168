// --set key.path=value: TOML values, bare words as strings, nested paths that create or replace,
// and errors that name the override.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "manifest/manifest_overrides.hpp"
#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

RunConfig load_with(std::vector<std::string> overrides) {
  return load_manifest_string(kManifest, "t.toml", overrides);
}

TEST(ManifestOverrides, ValuesAreReadAsToml) {
  const RunConfig c = load_with({"run.steps=7", "parallel.scatter_gather=false", "parallel.recompute=\"full\"",
                                 "optimizer.lr=0.01", "plugins.search_path=[\"/a\", \"/b\"]"});
  EXPECT_EQ(c.run.steps, 7);
  EXPECT_FALSE(c.parallel.scatter_gather);
  EXPECT_EQ(c.parallel.recompute, "full");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
  EXPECT_EQ(c.plugins.search_path, (std::vector<std::string>{"/a", "/b"}));
}

TEST(ManifestOverrides, BareWordsAreStrings) {
  const RunConfig c = load_with({"parallel.recompute=full", "plugins.communicator=comm-nccl", "run.name=a = b"});
  EXPECT_EQ(c.parallel.recompute, "full");
  EXPECT_EQ(c.plugins.communicator, "comm-nccl");
  EXPECT_EQ(c.run.name, "a = b");
}

TEST(ManifestOverrides, OnlyOneTomlValueIsTakenAsToml) {
  // Text that would add a second key is one string, not two assignments.
  const RunConfig c = load_with({"run.name=1\nsteps = 3"});
  EXPECT_EQ(c.run.name, "1\nsteps = 3");
  EXPECT_EQ(c.run.steps, 10);
}

TEST(ManifestOverrides, ReplaceExistingKeys) {
  const RunConfig c = load_with({"model.layers=16", "parallel.global_batch=16"});
  EXPECT_EQ(c.model.layers, 16);
  EXPECT_EQ(c.parallel.global_batch, 16);
  EXPECT_EQ(c.parallel.microbatches(), 8);
}

TEST(ManifestOverrides, CreateKeysAndTables) {
  const RunConfig c = load_with({"launch.nnodes=2", "launch.nproc_per_node=4", "plugins.options.kernels.block=64",
                                 "plugins.options.communicator.transport=tcp"});
  EXPECT_EQ(c.launch.nnodes, 2);
  EXPECT_EQ(c.plugins.options.at("kernels")["block"].value<int64_t>(), 64);
  EXPECT_EQ(c.plugins.options.at("communicator")["transport"].value<std::string>(), "tcp");

  const RunConfig minimal = load_manifest_string("[model]\nlayers = 2\nhidden = 32\nheads = 4\nseq_len = 8\nvocab = 100\n",
                                                 "min.toml", {"checkpoint.dir=/tmp/ck", "checkpoint.every=5"});
  EXPECT_EQ(minimal.checkpoint.dir, "/tmp/ck");
  EXPECT_EQ(minimal.checkpoint.every, 5);
}

TEST(ManifestOverrides, LaterOverridesWin) {
  EXPECT_EQ(load_with({"run.steps=3", "run.steps=4"}).run.steps, 4);
}

TEST(ManifestOverrides, RelativePathsResolveAgainstTheCurrentFolder) {
  TempDir dir;
  const auto file = dir.write("conf/run.toml", kManifest);
  const RunConfig c = load_manifest(file.string(), {"data.path=tokens.bin"});
  EXPECT_EQ(c.data.path, std::vector<std::string>{(std::filesystem::current_path() / "tokens.bin").string()});
  EXPECT_EQ(c.plugins.search_path.at(0), (dir.path() / "conf/plugins").string());  // from the file
}

TEST(ManifestOverrides, ErrorsNameTheOverride) {
  EXPECT_EQ(load_error(kManifest, {"model.colour=3"}),
            "--set model.colour=3: model.colour: unknown key (keys of [model]: dropout, ffn_hidden, heads, hidden, "
            "layernorm_eps, layers, seq_len, vocab)");
  EXPECT_THAT(load_error(kManifest, {"colour.x=3"}), StartsWith("--set colour.x=3: colour: unknown key"));
  EXPECT_EQ(load_error(kManifest, {"parallel.tensor=true"}),
            "--set parallel.tensor=true: parallel.tensor: expected integer, got boolean");
  EXPECT_EQ(load_error(kManifest, {"model.heads=x"}), "--set model.heads=x: model.heads: expected integer, got string");
  EXPECT_EQ(load_error(kManifest, {"model.layers=0"}),
            "--set model.layers=0: model.layers: must be between 1 and 65536 (got 0)");
}

TEST(ManifestOverrides, CrossRulesBlameTheOverriddenKey) {
  // Tensor 4 breaks the world size, which the file alone would report on launch.nproc_per_node.
  EXPECT_EQ(load_error(kManifest, {"parallel.tensor=4"}),
            "--set parallel.tensor=4: parallel.tensor: pipeline (2) * tensor (4) * data (2) = 16 must equal the world "
            "size nproc_per_node (8) * nnodes (1) = 8");
  EXPECT_EQ(load_error(kManifest, {"parallel.tensor=3", "launch.nproc_per_node=12"}),
            "--set parallel.tensor=3: parallel.tensor: heads (8) must be divisible by tensor (3)");
  EXPECT_EQ(load_error(kManifest, {"model.heads=6"}),
            "--set model.heads=6: model.heads: hidden (64) must be divisible by heads (6)");
}

TEST(ManifestOverrides, MalformedAssignmentsAreRefused) {
  EXPECT_EQ(load_error(kManifest, {"run.steps"}), "--set run.steps: expected key.path=value");
  EXPECT_THAT(load_error(kManifest, {"run..steps=3"}), StartsWith("--set run..steps=3: bad key path \"run..steps\""));
  EXPECT_THAT(load_error(kManifest, {"=3"}), StartsWith("--set =3: bad key path \"\""));
  EXPECT_THAT(load_error(kManifest, {"run.st eps=3"}), StartsWith("--set run.st eps=3: bad key path"));
  EXPECT_EQ(load_error(kManifest, {"model.layers.x=1"}),
            "--set model.layers.x=1: model.layers is not a table (it holds a value of type integer)");
}

TEST(ManifestOverrides, ApplyOverrideEditsTheTable) {
  toml::table root = toml::parse("[a]\nb = 1\n");
  EXPECT_EQ(apply_override(root, "a.b=2"), "a.b");
  EXPECT_EQ(root["a"]["b"].value<int64_t>(), 2);
  EXPECT_EQ(apply_override(root, "x.y.z=[1, 2]"), "x.y.z");
  ASSERT_TRUE(root["x"]["y"]["z"].is_array());
  EXPECT_EQ(root["x"]["y"]["z"].as_array()->size(), 2u);
  apply_override(root, "a.c=");
  EXPECT_EQ(root["a"]["c"].value<std::string>(), "");
  apply_override(root, "a.d=1.2.3");
  EXPECT_EQ(root["a"]["d"].value<std::string>(), "1.2.3");
}

}  // namespace
}  // namespace ptdp::test
