// FP8 training on the CPU (kernels-ref emulates the formats): every layout gives the one-rank
// FP8 losses under both scaling recipes, a resumed delayed-scaling run continues as if it had not
// stopped, and what cannot run FP8 is refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "host_run.hpp"
#include "layout.hpp"

namespace ptdp::test {
namespace {

void expect_same_losses(const HostRun& run, const HostRun& baseline, const std::string& what) {
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.losses.size(), baseline.losses.size()) << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], baseline.losses[i], 1e-5 * std::abs(baseline.losses[i])) << "step " << i + 1 << " of " << what;
}

struct Fp8Case {
  std::string recipe;  // "tensorwise" | "delayed"
  Layout layout;
  bool distributed_optimizer = false;
};

void PrintTo(const Fp8Case& c, std::ostream* os) { *os << c.recipe << "_" << c.layout.name(); }

std::vector<std::string> recipe_sets(const std::string& recipe) {
  // A short history, so that old amaxes fall out of it within the run.
  return {"precision.fp8=\"hybrid\"", "precision.fp8_recipe=\"" + recipe + "\"", "precision.fp8_amax_history=3"};
}

// One workspace and its one-rank runs, made when a test first asks (ctest runs each test in a
// process of its own, so each computes only the baselines it compares with).
TinyGptWorkspace& workspace() {
  static TinyGptWorkspace ws;
  return ws;
}

// The one-rank run of `recipe`, or of fp32 for "".
const HostRun& baseline(const std::string& recipe) {
  static std::map<std::string, HostRun> runs;
  auto found = runs.find(recipe);
  if (found == runs.end())
    found = runs.emplace(recipe, workspace().run(recipe.empty() ? std::vector<std::string>{} : recipe_sets(recipe), 1)).first;
  return found->second;
}

class Fp8Layouts : public ::testing::TestWithParam<Fp8Case> {};

TEST(Fp8Training, OneRankFp8TrainsCloseToButNotExactlyAsFp32) {
  const HostRun& fp32 = baseline("");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  for (const std::string recipe : {"tensorwise", "delayed"}) {
    const HostRun& fp8 = baseline(recipe);
    ASSERT_EQ(fp8.exit_code, 0) << fp8.output;
    ASSERT_EQ(fp8.losses.size(), fp32.losses.size()) << fp8.output;
    EXPECT_LT(fp8.losses.back(), fp8.losses.front()) << recipe << " does not learn";
    double largest_gap = 0;
    for (size_t i = 0; i < fp8.losses.size(); ++i) {
      const double gap = std::abs(fp8.losses[i] - fp32.losses[i]) / fp32.losses[i];
      EXPECT_LT(gap, 0.05) << recipe << " step " << i + 1;
      largest_gap = std::max(largest_gap, gap);
    }
    // The casts round: a run whose losses equal fp32's to the last digits did not cast at all.
    EXPECT_GT(largest_gap, 1e-5) << recipe << " gave fp32's losses";
  }
}

TEST_P(Fp8Layouts, LossesEqualOneRankFp8) {
  const Fp8Case c = GetParam();
  std::vector<std::string> sets = with(recipe_sets(c.recipe), c.layout.sets());
  if (c.distributed_optimizer) sets.push_back("parallel.distributed_optimizer=true");
  expect_same_losses(workspace().run(sets, c.layout.ranks()), baseline(c.recipe), c.recipe + " " + c.layout.name());
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Fp8Layouts,
    ::testing::Values(Fp8Case{"tensorwise", {1, 2, 1, 1, false, false}}, Fp8Case{"tensorwise", {2, 2, 2, 1, false, false}},
                      Fp8Case{"tensorwise", {2, 2, 1, 2, true, true}}, Fp8Case{"tensorwise", {1, 2, 2, 1, false, false}, true},
                      Fp8Case{"delayed", {1, 2, 1, 1, false, false}}, Fp8Case{"delayed", {1, 1, 2, 1, false, false}},
                      Fp8Case{"delayed", {2, 2, 2, 2, true, true}}, Fp8Case{"delayed", {4, 1, 1, 2, false, false}},
                      Fp8Case{"delayed", {1, 2, 2, 1, false, false}, true}),
    [](const auto& info) {
      return info.param.recipe + "_" + info.param.layout.name() + (info.param.distributed_optimizer ? "_distopt" : "");
    });

TEST(Fp8Training, BlocksKeptOutOfFp8GiveTheSameLossesInEveryLayout) {
  TinyGptWorkspace ws;
  const std::vector<std::string> sets =
      with(recipe_sets("delayed"), {"precision.fp8_bf16_first_blocks=1", "precision.fp8_bf16_last_blocks=2"});
  const HostRun one = ws.run(sets, 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const HostRun all_fp8 = ws.run(recipe_sets("delayed"), 1);
  ASSERT_EQ(all_fp8.exit_code, 0) << all_fp8.output;
  EXPECT_NE(one.losses, all_fp8.losses) << "keeping blocks out of FP8 changed nothing";
  expect_same_losses(ws.run(with(sets, Layout{2, 2, 1, 1, false, false}.sets()), 4), one, "p2_t2");
}

TEST(Fp8Training, ADelayedScalingRunResumedUnderAnotherLayoutContinuesAsIfUninterrupted) {
  TinyGptWorkspace ws;
  const std::vector<std::string> common =
      with(recipe_sets("delayed"), {"run.steps=6", "optimizer.decay_steps=6", "checkpoint.every=3"});
  const HostRun whole = ws.run(with(common, {"checkpoint.dir=\"" + ws.dir() + "/ckpt-whole\""}), 1);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(whole.losses.size(), 6u) << whole.output;

  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt-split\"";
  const HostRun first = ws.run(with(common, {dir, "run.steps=3", "parallel.pipeline=2", "parallel.tensor=2"}), 4);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const HostRun second = ws.run(with(common, {dir, "parallel.tensor=2", "parallel.data=2"}), 4);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  ASSERT_EQ(second.losses.size(), 3u) << second.output;
  EXPECT_EQ(second.output.find("amax history of"), std::string::npos) << "the history was not found:\n" << second.output;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(first.losses[i], whole.losses[i], 1e-5 * std::abs(whole.losses[i])) << "step " << i + 1;
    EXPECT_NEAR(second.losses[i], whole.losses[i + 3], 1e-5 * std::abs(whole.losses[i + 3])) << "step " << i + 4;
  }
}

TEST(Fp8Training, ResumingADelayedRunFromAStepWithoutHistorySaysSo) {
  TinyGptWorkspace ws;
  const std::string dir = "checkpoint.dir=\"" + ws.dir() + "/ckpt\"";
  const HostRun bf = ws.run({dir, "run.steps=2", "optimizer.decay_steps=4", "checkpoint.every=2"}, 1);
  ASSERT_EQ(bf.exit_code, 0) << bf.output;
  const HostRun fp8 = ws.run(with(recipe_sets("delayed"), {dir, "run.steps=4", "optimizer.decay_steps=4"}), 1);
  ASSERT_EQ(fp8.exit_code, 0) << fp8.output;
  EXPECT_NE(fp8.output.find("holds the FP8 amax history of 0 of this stage's 8 FP8 blocks"), std::string::npos)
      << fp8.output;
  EXPECT_EQ(fp8.losses.size(), 2u);
}

TEST(Fp8Training, ANonFiniteAmaxStopsTheRunNamingTheTensor) {
  for (const char* recipe : {"tensorwise", "delayed"}) {
    TinyGptWorkspace ws;
    const HostRun r = ws.run(with(recipe_sets(recipe), {"optimizer.lr=1e30", "optimizer.warmup_steps=0",
                                                        "optimizer.grad_clip=0", "run.steps=4"}),
                             1);
    EXPECT_NE(r.exit_code, 0) << recipe << ": " << r.output;
    EXPECT_NE(r.output.find("the FP8 amax of layers."), std::string::npos) << recipe << ": " << r.output;
    EXPECT_NE(r.output.find("is not finite"), std::string::npos) << recipe << ": " << r.output;
  }
}

TEST(Fp8Training, RefusedWhereItCannotRun) {
  TinyGptWorkspace ws;
  const HostRun none_left =
      ws.run(with(recipe_sets("tensorwise"), {"precision.fp8_bf16_first_blocks=4", "precision.fp8_bf16_last_blocks=4"}), 1);
  EXPECT_EQ(none_left.exit_code, 2) << none_left.output;
  EXPECT_NE(none_left.output.find("keeps 4 + 4 of the 8 blocks out of FP8, which leaves none to run in FP8"),
            std::string::npos)
      << none_left.output;
  if (!std::filesystem::exists(std::string(PTDP_TEST_PLUGIN_DIR) + "/libptdp-kernels-fused.so"))
    GTEST_SKIP() << "kernels-fused is not built (no CUDA)";
  // kernels-fused declares FP8 where every visible GPU has FP8 tensor cores; without a GPU it declares none.
  if (std::filesystem::exists("/dev/nvidia0")) GTEST_SKIP() << "this machine has a GPU";
  const std::string sets = " --set precision.fp8='\"hybrid\"' --set plugins.kernels='\"kernels-fused\"' --set "
                           "precision.params='\"bf16\"' --set plugins.communicator='\"comm-nccl\"'";
  const CommandResult validate = run_shell(std::string(PTDP_TEST_HOST) + " validate " + ws.manifest() + sets);
  EXPECT_NE(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("precision.fp8 = \"hybrid\" but plugins.kernels 'kernels-fused' runs no FP8 GEMMs on this "
                                 "device"),
            std::string::npos)
      << validate.output;
}

}  // namespace
}  // namespace ptdp::test
