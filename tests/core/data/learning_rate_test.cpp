// The learning-rate schedule: warm-up, peak, decay to min_lr at the end.
#include <gtest/gtest.h>

#include "metrics/learning_rate.hpp"
#include "ptdp/error.hpp"

namespace ptdp {
namespace {

RunConfig::Optimizer schedule(const std::string& decay, int64_t warmup) {
  RunConfig::Optimizer optimizer;
  optimizer.lr = 1e-3;
  optimizer.min_lr = 1e-4;
  optimizer.warmup_steps = warmup;
  optimizer.decay = decay;
  return optimizer;
}

TEST(LearningRate, WarmsUpLinearlyToThePeak) {
  auto optimizer = schedule("cosine", 10);
  for (int64_t step = 0; step < 10; ++step)
    EXPECT_DOUBLE_EQ(learning_rate(optimizer, step, 111), 1e-3 * static_cast<double>(step + 1) / 10);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 10, 111), 1e-3);  // decay starts from the peak
}

TEST(LearningRate, CosineDecaysToMinAtTheLastStep) {
  auto optimizer = schedule("cosine", 10);
  double previous = learning_rate(optimizer, 10, 111);
  for (int64_t step = 11; step < 111; ++step) {
    double lr = learning_rate(optimizer, step, 111);
    EXPECT_LT(lr, previous) << step;
    previous = lr;
  }
  EXPECT_NEAR(learning_rate(optimizer, 60, 111), 5.5e-4, 1e-15);  // half way: (peak + min) / 2
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 110, 111), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 500, 111), 1e-4);  // past the end
}

TEST(LearningRate, LinearDecay) {
  auto optimizer = schedule("linear", 10);
  EXPECT_NEAR(learning_rate(optimizer, 35, 111), 1e-3 - 9e-4 * 0.25, 1e-15);
  EXPECT_NEAR(learning_rate(optimizer, 60, 111), 5.5e-4, 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 110, 111), 1e-4);
}

TEST(LearningRate, ConstantStaysAtThePeak) {
  auto optimizer = schedule("constant", 4);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 0, 50), 2.5e-4);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 4, 50), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 49, 50), 1e-3);
}

TEST(LearningRate, DecayStepsEndTheDecayEarly) {
  auto optimizer = schedule("cosine", 0);
  optimizer.decay_steps = 51;
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 0, 200), 1e-3);  // no warm-up: the first step at peak
  EXPECT_NEAR(learning_rate(optimizer, 25, 200), 5.5e-4, 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 50, 200), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate(optimizer, 199, 200), 1e-4);
}

TEST(LearningRate, UnknownDecayIsRefused) {
  EXPECT_THROW(learning_rate(schedule("exponential", 0), 5, 10), Error);
}

}  // namespace
}  // namespace ptdp
