// Loss parity of two arms: the largest relative difference over steps, and where it is.
#include <gtest/gtest.h>

#include <cmath>

#include "ab/loss_parity.hpp"

namespace ptdp {
namespace {

std::vector<StepMetrics> losses(const std::vector<double>& values) {
  std::vector<StepMetrics> steps;
  for (size_t i = 0; i < values.size(); ++i) {
    StepMetrics s;
    s.step = static_cast<int64_t>(i + 1);
    s.loss = values[i];
    steps.push_back(s);
  }
  return steps;
}

TEST(LossParity, LargestRelativeDifferenceAndItsStep) {
  const LossParity p = compare_losses(losses({5.0, 4.0, 3.0}), losses({5.0, 4.004, 3.0006}), 1e-3);
  EXPECT_NEAR(p.max_rel_diff, 1e-3, 1e-12);
  EXPECT_EQ(p.worst_step, 2);
  EXPECT_TRUE(p.equivalent);
  EXPECT_FALSE(compare_losses(losses({5.0, 4.0}), losses({5.0, 4.1}), 1e-3).equivalent);
}

TEST(LossParity, DivergenceInOneArmOnlyOrOtherStepsAreNotEquivalent) {
  const LossParity diverged = compare_losses(losses({5.0, 4.0}), losses({5.0, NAN}), 1e-3);
  EXPECT_TRUE(std::isinf(diverged.max_rel_diff));
  EXPECT_FALSE(diverged.equivalent);
  EXPECT_FALSE(compare_losses(losses({5.0, 4.0}), losses({5.0}), 1e-3).equivalent);
  EXPECT_FALSE(compare_losses({}, {}, 1e-3).equivalent);
}

}  // namespace
}  // namespace ptdp
