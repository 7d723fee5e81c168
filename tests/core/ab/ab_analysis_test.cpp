// From rounds of samples to verdicts: the rule (p-value, interval, minimum effect), the loss
// tolerance a bf16 arm gets, and the statement about what the arms trained.
#include <gtest/gtest.h>

#include "ab/ab_analysis.hpp"

namespace ptdp {
namespace {

// An arm of 5 rounds whose step times are `scale` times a fixed spread of values (±3%, times
// `spread_factor`), after one warm-up step; the losses are the same in every arm.
ArmSummary arm(const std::string& name, double scale, double spread_factor = 1.0) {
  ArmSummary a;
  a.arm.name = name;
  const double spread[] = {1.00, 1.03, 0.98, 1.01, 0.99, 1.02, 0.97, 1.00};
  for (int r = 0; r < 5; ++r) {
    ArmRound round;
    round.round = r + 1;
    for (int s = 0; s <= 8; ++s) {
      StepMetrics m;
      m.step = s + 1;
      m.loss = 5.0 - 0.1 * s;
      m.step_time_s = s == 0 ? 10.0 : scale * (1 + spread_factor * (spread[(s + r) % 8] - 1));
      m.tokens_per_s = 1000 / m.step_time_s;
      round.steps.push_back(m);
    }
    a.rounds.push_back(round);
  }
  return a;
}

AbMethod method() {
  AbMethod m;
  m.warmup = 1;
  return m;
}

TEST(AbAnalysis, TwiceTheStepTimeIsSlowerAndHalfIsFaster) {
  const AbAnalysis a = analyse_ab({arm("base", 1.0), arm("slow", 2.0), arm("fast", 0.5)}, method());
  ASSERT_EQ(a.comparisons.size(), 2u);
  EXPECT_EQ(a.comparisons[0].verdict, "slower");
  EXPECT_NEAR(a.comparisons[0].ratio, 2.0, 1e-9);
  EXPECT_EQ(a.comparisons[1].verdict, "faster");
  EXPECT_NEAR(a.arms[0].median_step_s, 1.0, 1e-9);  // the warm-up step (10 s) is not a sample
  EXPECT_NEAR(a.arms[0].tokens_per_s, 1000, 1e-6);
}

TEST(AbAnalysis, SameSamplesAreNoDifference) {
  const Comparison c = analyse_ab({arm("a", 1.0), arm("b", 1.0)}, method()).comparisons.at(0);
  EXPECT_EQ(c.verdict, "no significant difference");
  EXPECT_DOUBLE_EQ(c.ratio, 1.0);
  EXPECT_LE(c.ci_low, 1.0);
  EXPECT_GE(c.ci_high, 1.0);
  EXPECT_TRUE(c.losses.equivalent);
  EXPECT_NE(c.statement.find("the same settings"), std::string::npos) << c.statement;
}

TEST(AbAnalysis, ACertainButTinyDifferenceIsBelowTheMinimumEffect) {
  // 0.5% slower with a spread of ±0.03%: the test and the interval are sure, the effect is
  // below 1%.
  AbMethod m = method();
  const Comparison c = analyse_ab({arm("a", 1.0, 0.01), arm("b", 1.005, 0.01)}, m).comparisons.at(0);
  EXPECT_LT(c.p_value, 0.05);
  EXPECT_GT(c.ci_low, 1.0);
  EXPECT_EQ(c.verdict, "no significant difference");
  m.min_effect = 0.001;
  EXPECT_EQ(analyse_ab({arm("a", 1.0, 0.01), arm("b", 1.005, 0.01)}, m).comparisons.at(0).verdict, "slower");
}

TEST(AbAnalysis, Bf16ArmsGetTheLooserLossToleranceAndDifferencesAreNamed) {
  ArmSummary a = arm("fp32", 1.0), b = arm("bf16", 1.0);
  a.header = RunHeader{};
  a.header->settings = {{"precision", {{"params", "fp32"}}}, {"run", {{"seed", 1}}}};
  b.header = RunHeader{};
  b.header->settings = {{"precision", {{"params", "bf16"}}}, {"run", {{"seed", 1}}}};
  for (auto& round : b.rounds)
    for (auto& step : round.steps) step.loss *= 1.01;
  const Comparison c = analyse_ab({a, b}, method()).comparisons.at(0);
  EXPECT_DOUBLE_EQ(c.loss_tolerance, 2e-2);
  EXPECT_TRUE(c.losses.equivalent);
  EXPECT_TRUE(c.same_training);
  ASSERT_EQ(c.differences.size(), 1u);
  EXPECT_EQ(c.differences[0].key, "precision.params");

  b.header->settings["run"]["seed"] = 2;
  const Comparison seeded = analyse_ab({a, b}, method()).comparisons.at(0);
  EXPECT_FALSE(seeded.same_training);
  EXPECT_NE(seeded.statement.find("train different things (run.seed)"), std::string::npos) << seeded.statement;
}

// FP8 against bf16: the same model in other number formats. Its losses differ by design, so the
// report measures the gap instead of calling the arms equivalent or not.
TEST(AbAnalysis, AnFp8ArmIsMeasuredNotJudged) {
  ArmSummary a = arm("bf16", 1.0), b = arm("fp8", 0.8);
  a.header = RunHeader{};
  a.header->settings = {{"precision", {{"params", "bf16"}, {"fp8", "off"}}}, {"run", {{"seed", 1}}}};
  b.header = a.header;
  b.header->settings["precision"]["fp8"] = "hybrid";
  for (auto& round : b.rounds)
    for (auto& step : round.steps) step.loss *= step.step == 3 ? 1.05 : 1.01;
  const Comparison c = analyse_ab({a, b}, method()).comparisons.at(0);
  EXPECT_TRUE(c.same_training);
  EXPECT_TRUE(c.rounding_differs);
  EXPECT_FALSE(c.losses.equivalent);
  EXPECT_NEAR(c.losses.max_rel_diff, 0.05, 1e-12);
  EXPECT_EQ(c.losses.worst_step, 3);
  EXPECT_NEAR(c.losses.last_rel_diff, 0.01, 1e-12);
  EXPECT_NEAR(c.losses.mean_rel_diff, (8 * 0.01 + 0.05) / 9, 1e-12);
  EXPECT_NE(c.statement.find("other number formats (precision.fp8): their losses differ by design"), std::string::npos)
      << c.statement;
  EXPECT_EQ(c.statement.find("one arm computes something else"), std::string::npos) << c.statement;
  EXPECT_EQ(c.verdict, "faster");
}

}  // namespace
}  // namespace ptdp
