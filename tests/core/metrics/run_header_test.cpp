// The header record that begins every metrics log: what the trainer writes, what readers make of
// it, and a header that is broken.
#include <gtest/gtest.h>

#include <fstream>

#include "manifest/manifest_loader.hpp"
#include "metrics/metrics_log.hpp"
#include "metrics/metrics_reader.hpp"
#include "metrics/run_header.hpp"
#include "ptdp/error.hpp"
#include "support/temp_dir.hpp"
#include "support/tiny_manifest.hpp"

namespace ptdp {
namespace {

RunHeader header_of_manifest() {
  const RunConfig config = load_manifest_string(
      test::kTinyManifest, "m.toml",
      {"parallel.pipeline=2", "launch.nproc_per_node=2", "parallel.recompute=full",
       std::string("plugins.search_path=[\"") + PTDP_TEST_PLUGIN_DIR + "\"]"});
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  return make_run_header(config, registry, Device{}, {3, 1});
}

TEST(RunHeader, NamesThePluginsLayoutDeviceAndResolvedSettings) {
  const RunHeader h = header_of_manifest();
  EXPECT_EQ(h.pipeline, 2);
  EXPECT_EQ(h.world_size, 2);
  EXPECT_EQ(h.microbatches, 8);
  EXPECT_EQ(h.device, "cpu");
  EXPECT_FALSE(h.ptdp_version.empty());
  ASSERT_EQ(h.plugins.size(), 3u);  // no checkpoint dir: the store is not loaded
  EXPECT_EQ(h.plugins[2].slot, "scheduler");
  EXPECT_EQ(h.plugins[2].name, "sched-1f1b");
  EXPECT_NE(h.plugins[2].path.find("libptdp-sched-1f1b.so"), std::string::npos);
  EXPECT_FALSE(h.plugins[2].version.empty());
  EXPECT_FALSE(h.plugins[2].toolchain.empty());
  EXPECT_EQ(h.settings["parallel"]["recompute"], "full");
  EXPECT_EQ(h.settings["optimizer"]["type"], "adamw");  // a default, filled in
}

// Per stage, under each choice: the stage's peak microbatch-chunks (3 and 1 here) of its half of
// the layers, and on the last stage the logits too.
TEST(RunHeader, ActivationMemoryPerStageFollowsEachStagesPeak) {
  const RunHeader h = header_of_manifest();
  const auto& memory = h.activation_memory;
  EXPECT_EQ(memory["this_run"], "full");
  for (const auto& [choice, layer] : memory["layer_bytes"].items()) {
    SCOPED_TRACE(choice);
    const auto& stages = memory["stage_bytes"][choice];
    ASSERT_EQ(stages.size(), 2u);
    if (choice.rfind("full", 0) == 0) continue;  // kept inputs plus the layer being recomputed
    const double layers_per_stage = double(h.settings["model"]["layers"].get<int>()) / 2;
    EXPECT_DOUBLE_EQ(stages[0].get<double>(), 3 * layers_per_stage * layer.get<double>());
    EXPECT_GT(stages[1].get<double>(), 1 * layers_per_stage * layer.get<double>()) << "the logits";
    const auto& flash = memory["stage_bytes_flash_attention"][choice];
    ASSERT_EQ(flash.size(), 2u);
    if (choice.rfind("selective", 0) == 0) EXPECT_DOUBLE_EQ(flash[0].get<double>(), stages[0].get<double>());
    else EXPECT_LT(flash[0].get<double>(), stages[0].get<double>()) << "without the scores";
  }
}

TEST(RunHeader, ReadBackAndSkippedByTheStepReader) {
  test::TempDir dir("ptdp-header");
  const std::string path = (dir.path() / "run.jsonl").string();
  const RunHeader written = header_of_manifest();
  {
    MetricsLog log(path);
    log.write_header(written);
    StepMetrics m;
    m.step = 1;
    m.loss = 5.0;
    log.write(m);
  }
  const auto read = read_run_header(path);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->plugins.size(), written.plugins.size());
  EXPECT_EQ(read->plugins[0].path, written.plugins[0].path);
  EXPECT_EQ(read->settings, written.settings);
  EXPECT_EQ(read->pipeline, 2);
  const auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].loss, 5.0);
}

TEST(RunHeader, LogWithoutHeaderHasNone) {
  test::TempDir dir("ptdp-header");
  const std::string path = (dir.path() / "old.jsonl").string();
  std::ofstream(path) << "{\"step\": 1, \"loss\": 4.0}\n";
  EXPECT_FALSE(read_run_header(path));
}

TEST(RunHeader, BrokenHeaderNamesTheLineAndTheField) {
  test::TempDir dir("ptdp-header");
  const std::string path = (dir.path() / "bad.jsonl").string();
  std::ofstream(path) << "{\"step\": 1, \"loss\": 4.0}\n{\"record\": \"header\", \"ptdp_version\": 3}\n";
  try {
    read_run_header(path);
    FAIL() << "a broken header was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: header \"ptdp_version\" is number");
  }
}

}  // namespace
}  // namespace ptdp
