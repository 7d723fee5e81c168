// fp16 training with dynamic loss scaling on the CPU (kernels-ref rounds to half what a GPU
// stores in it): every layout gives the one-rank fp16 losses and loss scales, a loss scale so
// large that the gradients overflow skips the same steps in every layout and then trains, a step
// due to be saved waits until a step shows its weights give finite gradients, a resumed run goes
// on as if uninterrupted, loss scale included, and what cannot run is refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "host_run.hpp"
#include "layout.hpp"

namespace ptdp::test {
namespace {

// fp16 with a short window, so that the scale doubles within a run and the doubling, the
// overflows it leads to and their halvings all take place in every layout.
const std::vector<std::string> kFp16 = {"precision.params=\"fp16\"", "precision.loss_scale_window=2"};

// The scale starts at 2^40: the head's first gradients overflow half by far. With the default
// hysteresis of 2 the first overflow keeps the scale and every further one halves it, until the
// scale is under what the model's gradients allow (2^21 for this model).
const std::vector<std::string> kOverflowing = {"precision.params=\"fp16\"", "precision.loss_scale_initial=1099511627776.0",
                                               "run.steps=30", "optimizer.decay_steps=30"};

// A few overflows at the start (2^25 down to 2^22, each halving at once), then training.
const std::vector<std::string> kEarlyOverflows = {"precision.params=\"fp16\"", "precision.loss_scale_initial=33554432.0",
                                                  "precision.loss_scale_hysteresis=1"};

void expect_same_losses(const HostRun& run, const HostRun& baseline, const std::string& what) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.losses.size(), baseline.losses.size()) << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], baseline.losses[i], 1e-5 * std::abs(baseline.losses[i])) << "step " << i + 1 << " of " << what;
  EXPECT_EQ(run.loss_scales, baseline.loss_scales) << what;
  EXPECT_EQ(run.skipped, baseline.skipped) << what;
}

size_t count_skipped(const HostRun& run) {
  size_t n = 0;
  for (bool s : run.skipped) n += s;
  return n;
}

TinyGptWorkspace& workspace() {
  static TinyGptWorkspace ws;
  return ws;
}

// The one-rank run of `sets` (ctest runs each test in a process of its own, so each computes
// only the baselines it compares with).
const HostRun& baseline(const std::vector<std::string>& sets) {
  static std::map<std::vector<std::string>, HostRun> runs;
  auto found = runs.find(sets);
  if (found == runs.end()) found = runs.emplace(sets, workspace().run(sets, 1)).first;
  return found->second;
}

TEST(Fp16Training, OneRankFp16TrainsCloseToButNotExactlyAsFp32) {
  const HostRun& fp32 = baseline({});
  const HostRun& fp16 = baseline(kFp16);
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  ASSERT_EQ(fp16.losses.size(), fp32.losses.size()) << fp16.output;
  ASSERT_EQ(fp16.loss_scales.size(), fp16.losses.size()) << "fp16 steps without a loss scale:\n" << fp16.output;
  EXPECT_TRUE(fp32.loss_scales.empty()) << "an fp32 run reported a loss scale";
  EXPECT_LT(fp16.losses.back(), fp16.losses.front()) << "fp16 does not learn";
  EXPECT_EQ(fp16.loss_scales.front(), 65536.0);
  double largest_gap = 0;
  for (size_t i = 0; i < fp16.losses.size(); ++i) {
    const double gap = std::abs(fp16.losses[i] - fp32.losses[i]) / fp32.losses[i];
    EXPECT_LT(gap, 0.01) << "step " << i + 1;
    largest_gap = std::max(largest_gap, gap);
  }
  // Half rounds: losses equal to fp32's to the last digits would mean nothing was rounded.
  EXPECT_GT(largest_gap, 1e-6) << "fp16 gave fp32's losses";
}

struct Fp16Case {
  Layout layout;
  bool distributed_optimizer = false;
  std::string name() const { return layout.name() + (distributed_optimizer ? "_distopt" : ""); }
  std::vector<std::string> sets(const std::vector<std::string>& recipe) const {
    std::vector<std::string> s = with(recipe, layout.sets());
    if (distributed_optimizer) s.push_back("parallel.distributed_optimizer=true");
    return s;
  }
};

void PrintTo(const Fp16Case& c, std::ostream* os) { *os << c.name(); }

class Fp16Layouts : public ::testing::TestWithParam<Fp16Case> {};

TEST_P(Fp16Layouts, LossesAndLossScalesEqualOneRankFp16) {
  const Fp16Case c = GetParam();
  expect_same_losses(workspace().run(c.sets(kFp16), c.layout.ranks()), baseline(kFp16), c.name());
}

TEST_P(Fp16Layouts, AnOverflowingScaleSkipsTheSameStepsThenTrains) {
  const Fp16Case c = GetParam();
  const HostRun& one = baseline(kOverflowing);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(one.skipped.size(), 30u) << one.output;
  // The first steps overflow, one after the other, and the run then trains on.
  const size_t skipped = count_skipped(one);
  ASSERT_GE(skipped, 3u) << one.output;
  ASSERT_LT(skipped, 25u) << "the run hardly trained:\n" << one.output;
  for (size_t i = 0; i < skipped; ++i) EXPECT_TRUE(one.skipped[i]) << "step " << i + 1;
  EXPECT_FALSE(one.skipped[skipped]);
  EXPECT_EQ(one.loss_scales[1], one.loss_scales[0]) << "hysteresis 2: the first overflow keeps the scale";
  EXPECT_EQ(one.loss_scales[2], one.loss_scales[1] / 2);
  EXPECT_LT(one.losses.back(), one.losses[skipped]) << "the run did not train after the overflows";
  EXPECT_NE(one.output.find("step 1: gradient overflow at loss scale 1099511627776; step skipped, loss scale kept "
                            "until 2 overflowing steps in a row (precision.loss_scale_hysteresis)"),
            std::string::npos)
      << one.output;
  EXPECT_NE(one.output.find("step 2: gradient overflow at loss scale 1099511627776; step skipped, loss scale now "
                            "549755813888"),
            std::string::npos)
      << one.output;
  if (c.layout.ranks() == 1 && !c.distributed_optimizer) return;  // the baseline itself
  expect_same_losses(workspace().run(c.sets(kOverflowing), c.layout.ranks()), one, c.name());
}

INSTANTIATE_TEST_SUITE_P(Layouts, Fp16Layouts,
                         ::testing::Values(Fp16Case{{1, 1, 1, 1, false, false}}, Fp16Case{{2, 1, 1, 1, false, false}},
                                           Fp16Case{{1, 2, 1, 1, false, false}}, Fp16Case{{1, 1, 2, 1, false, false}},
                                           Fp16Case{{2, 2, 2, 1, false, false}}, Fp16Case{{2, 2, 1, 2, true, true}},
                                           Fp16Case{{1, 2, 2, 1, false, false}, true},
                                           Fp16Case{{2, 1, 2, 1, false, false}, true}),
                         [](const auto& info) { return info.param.name(); });

// A step due to be saved is saved only once a later step's gradients, from the same weights,
// come out finite. Under fp16 an overflow proves nothing either way: the step is skipped, the
// weights stay, and the save waits; a step due meanwhile holds the same weights and takes its
// place. So with a save due every step and the first steps overflowing, the first step saved is
// the last skipped one, and every step from it on is saved.
TEST(Fp16Training, AStepIsSavedOnlyOnceAStepShowsItsWeightsGiveFiniteGradients) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  const HostRun r =
      ws.run(with(kEarlyOverflows, {"run.steps=8", "optimizer.decay_steps=8", "checkpoint.every=1",
                                    "checkpoint.dir=\"" + dir + "\"", "parallel.pipeline=2"}),
             2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t skipped = count_skipped(r);
  ASSERT_GE(skipped, 3u) << r.output;
  ASSERT_LT(skipped, 7u) << "the run never trained:\n" << r.output;
  std::vector<std::string> expected;
  for (size_t step = skipped; step <= 8; ++step) expected.push_back(fmt::format("step-{:08}", step));
  std::vector<std::string> saved;
  for (const std::string& name : folder_names(dir))
    if (name.rfind("step-", 0) == 0) saved.push_back(name);
  EXPECT_EQ(saved, expected) << r.output;
  // The last skipped step holds the scale it ended with and the steps skipped up to it.
  std::ifstream index(dir + "/" + expected.front() + "/index.json");
  ASSERT_TRUE(index) << "no index.json in " << expected.front();
  const nlohmann::json record = nlohmann::json::parse(index);
  const nlohmann::json scale = record.at("metadata").at("loss_scale");
  EXPECT_EQ(scale.at("skipped_steps").get<int64_t>(), static_cast<int64_t>(skipped));
  EXPECT_EQ(scale.at("scale").get<double>(), r.loss_scales[skipped]);
}

// Step 3 is due to be saved, and step 4 overflows: step 3 waits, and is written once step 5's
// gradients come out finite, with the loss scale and counts it ended with (not step 4's). A run
// started from it goes on as the first run did.
TEST(Fp16Training, AStepWhoseSaveWaitedOnAnOverflowHoldsTheStateItEndedWith) {
  TinyGptWorkspace ws;
  const std::string dir = ws.dir() + "/ckpt";
  const std::vector<std::string> common = with(kEarlyOverflows, {"run.steps=8", "optimizer.decay_steps=8"});
  const HostRun whole = ws.run(with(common, {"checkpoint.every=3", "checkpoint.dir=\"" + dir + "\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.skipped.size(), 8u) << whole.output;
  ASSERT_TRUE(whole.skipped[2] && whole.skipped[3] && !whole.skipped[4]) << "steps 3 and 4 skipped, 5 not, is what the "
                                                                          "test is about:\n"
                                                                       << whole.output;
  std::vector<std::string> saved;
  for (const std::string& name : folder_names(dir))
    if (name.rfind("step-", 0) == 0) saved.push_back(name);
  EXPECT_EQ(saved, (std::vector<std::string>{"step-00000003", "step-00000006", "step-00000008"}));
  std::ifstream index(dir + "/step-00000003/index.json");
  ASSERT_TRUE(index);
  const nlohmann::json scale = nlohmann::json::parse(index).at("metadata").at("loss_scale");
  EXPECT_EQ(scale.at("skipped_steps").get<int64_t>(), 3);
  EXPECT_EQ(scale.at("scale").get<double>(), whole.loss_scales[3]);  // the scale step 4 ran with

  const HostRun from_3 = ws.run(with(common, {"checkpoint.resume_from=\"" + dir + "\"", "checkpoint.resume_step=3",
                                              "checkpoint.dir=\"" + ws.dir() + "/from-3\"", "parallel.tensor=2"}),
                                2);
  ASSERT_EQ(from_3.exit_code, 0) << from_3.output;
  ASSERT_EQ(from_3.losses.size(), 5u) << from_3.output;
  for (size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(from_3.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
  EXPECT_EQ(from_3.loss_scales, std::vector<double>(whole.loss_scales.begin() + 3, whole.loss_scales.end()));
  EXPECT_EQ(from_3.skipped, std::vector<bool>(whole.skipped.begin() + 3, whole.skipped.end()));
}

TEST(Fp16Training, AResumedRunUnderAnotherLayoutContinuesAsIfUninterruptedLossScaleIncluded) {
  TinyGptWorkspace ws;
  // Overflows at first, then a window of 3 clean steps before each doubling: at step 6, where
  // the run is cut, the scale has been halved, and the count of clean steps runs on across it.
  const std::vector<std::string> common = with(kEarlyOverflows, {"run.steps=12", "optimizer.decay_steps=12",
                                                                 "precision.loss_scale_window=3", "checkpoint.every=6"});
  const HostRun whole = ws.run(with(common, {"checkpoint.dir=\"" + ws.dir() + "/ckpt-whole\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 12u) << whole.output;
  ASSERT_GT(count_skipped(whole), 0u) << whole.output;

  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt-split\"";
  const HostRun first = ws.run(with(common, {dir, "run.steps=6", "parallel.pipeline=2", "parallel.tensor=2"}), 4);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const HostRun second = ws.run(with(common, {dir, "parallel.tensor=2", "parallel.data=2"}), 4);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_EQ(second.losses.size(), 6u) << second.output;
  EXPECT_EQ(second.output.find("holds no loss scale"), std::string::npos) << second.output;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(first.losses[i], whole.losses[i], 1e-5 * std::abs(whole.losses[i])) << "step " << i + 1;
    EXPECT_NEAR(second.losses[i], whole.losses[i + 6], 1e-5 * std::abs(whole.losses[i + 6])) << "step " << i + 7;
  }
  const std::vector<double> scales_after(whole.loss_scales.begin() + 6, whole.loss_scales.end());
  const std::vector<bool> skipped_after(whole.skipped.begin() + 6, whole.skipped.end());
  EXPECT_EQ(second.loss_scales, scales_after);
  EXPECT_EQ(second.skipped, skipped_after);
  EXPECT_NE(std::set<double>(scales_after.begin(), scales_after.end()).size(), 1u)
      << "the scale did not change after the resume: the test shows nothing of the window";
}

TEST(Fp16Training, ResumingAStepSavedWithoutFp16SaysTheScaleStartsAfresh) {
  TinyGptWorkspace ws;
  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt\"";
  const HostRun fp32 = ws.run({dir, "run.steps=2", "optimizer.decay_steps=4", "checkpoint.every=2"}, 1);
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  const HostRun fp16 = ws.run(with(kFp16, {dir, "run.steps=4", "optimizer.decay_steps=4"}), 1);
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  EXPECT_NE(fp16.output.find("step 2 holds no loss scale (it was saved without fp16); the scale starts from "
                             "precision.loss_scale_initial = 65536"),
            std::string::npos)
      << fp16.output;
  ASSERT_EQ(fp16.loss_scales.size(), 2u) << fp16.output;
  EXPECT_EQ(fp16.loss_scales.front(), 65536.0);
}

TEST(Fp16Training, AScaleThatWouldGoBelowItsMinimumStopsTheRunInOneLine) {
  TinyGptWorkspace ws;
  // 2^40, halved once to the minimum 2^39; the next overflow would go below it. Step 1, due to be
  // saved, never had its weights shown to give finite gradients: it is not saved.
  const std::string dir = ws.dir() + "/ckpt";
  const HostRun r = ws.run({"precision.params=\"fp16\"", "precision.loss_scale_initial=1099511627776.0",
                            "precision.loss_scale_hysteresis=1", "precision.loss_scale_min=549755813888.0",
                            "parallel.data=2", "checkpoint.every=1", "checkpoint.dir=\"" + dir + "\""},
                           2);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = "step 2: gradient overflow at loss scale 549755813888, and halving it would go below "
                           "precision.loss_scale_min (549755813888); stopping, with the weights as the last step that "
                           "updated them left them, and step 1, whose weights gave these gradients, is not saved";
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  EXPECT_EQ(r.losses.size(), 1u) << "the stopped step was recorded:\n" << r.output;
  for (const std::string& name : folder_names(dir)) EXPECT_NE(name.rfind("step-", 0), 0u) << name << " was saved";
}

TEST(Fp16Training, RefusedWhereItCannotRun) {
  TinyGptWorkspace ws;
  const HostRun with_fp8 = ws.run({"precision.params=\"fp16\"", "precision.fp8=\"hybrid\""}, 1);
  EXPECT_EQ(with_fp8.exit_code, 2) << with_fp8.output;
  EXPECT_NE(with_fp8.output.find("precision.fp8 = \"hybrid\" does not run with precision.params = \"fp16\""),
            std::string::npos)
      << with_fp8.output;
  const HostRun below = ws.run({"precision.params=\"fp16\"", "precision.loss_scale_initial=0.5"}, 1);
  EXPECT_EQ(below.exit_code, 2) << below.output;
  EXPECT_NE(below.output.find("loss_scale_initial (0.5) is below loss_scale_min (1)"), std::string::npos) << below.output;
  if (!std::filesystem::exists(std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-kernels-fused.so"))
    GTEST_SKIP() << "kernels-fused is not built (no CUDA)";
  const std::string sets = " --set precision.params='\"fp16\"' --set plugins.kernels='\"kernels-fused\"' --set "
                           "plugins.communicator='\"comm-nccl\"'";
  const CommandResult validate = run_shell(std::string(PTDP_TEST_HOST) + " validate " + ws.manifest() + sets);
  EXPECT_EQ(validate.exit_code, 2) << validate.output;
  EXPECT_NE(validate.output.find("precision.params = \"fp16\" but plugins.kernels 'kernels-fused' runs no fp16 training"),
            std::string::npos)
      << validate.output;
}

}  // namespace
}  // namespace ptdp::test
