// Which settings two arms differ in, and which of those change what is trained.
#include <gtest/gtest.h>

#include "ab/setting_differences.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "support/tiny_manifest.hpp"

namespace ptdp {
namespace {

std::vector<SettingDifference> between(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return setting_differences(run_config_json(load_manifest_string(test::kTinyManifest, "m.toml", a)),
                             run_config_json(load_manifest_string(test::kTinyManifest, "m.toml", b)));
}

TEST(SettingDifferences, ScheduleAndLayoutKeepTheTraining) {
  const auto d = between({"parallel.pipeline=2", "launch.nproc_per_node=2"},
                         {"parallel.pipeline=2", "launch.nproc_per_node=2", "parallel.virtual_stages=2",
                          "plugins.scheduler=sched-interleaved", "parallel.recompute=full"});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "parallel.recompute");
  EXPECT_EQ(d[0].baseline, "\"none\"");
  EXPECT_EQ(d[0].arm, "\"full\"");
  for (const auto& difference : d) EXPECT_FALSE(difference.changes_training) << difference.key;
}

TEST(SettingDifferences, SeedLearningRateModelAndBatchChangeIt) {
  for (const char* set : {"run.seed=7", "optimizer.lr=0.01", "model.hidden=64", "parallel.global_batch=16"}) {
    const auto d = between({}, {set});
    ASSERT_FALSE(d.empty()) << set;
    bool any = false;
    for (const auto& difference : d) any |= difference.changes_training;
    EXPECT_TRUE(any) << set;
  }
  EXPECT_TRUE(between({}, {}).empty());
}

TEST(SettingDifferences, LoggingAndEvaluationKeepTheTraining) {
  EXPECT_FALSE(changes_training("run.log_every"));
  EXPECT_FALSE(changes_training("data.val_every"));
  EXPECT_FALSE(changes_training("precision.params"));
  EXPECT_TRUE(changes_training("data.val_fraction"));
  EXPECT_TRUE(changes_training("run.steps"));
}

}  // namespace
}  // namespace ptdp
