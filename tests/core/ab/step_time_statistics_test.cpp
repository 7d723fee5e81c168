// The statistics of ptdp-host ab against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "ab/step_time_statistics.hpp"

namespace ptdp {
namespace {

TEST(Median, OddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(Quantile, InterpolatesBetweenNeighbours) {
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile({0, 10}, 0.3), 3);
}

TEST(MannWhitney, SeparatedSamplesWithoutTies) {
  // U = 0, mean 12.5, variance 25/12 * 11; z = (12.5 - 0.5) / sqrt(22.917) = 2.5067.
  EXPECT_NEAR(mann_whitney_p_value({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 0.012186, 1e-6);
  EXPECT_NEAR(mann_whitney_p_value({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 0.012186, 1e-6);
}

TEST(MannWhitney, TiesShareRanksAndShrinkTheVariance) {
  // Ranks 1, 3, 3, 3, 5.5, 5.5, 7.5, 7.5: U_a = 12.5 - 10 = 2.5; ties 3, 2, 2 give
  // sum(t^3 - t) = 36; variance 16/12 * (9 - 36/56) = 11.143; z = (5.5 - 0.5) / 3.338 = 1.4979.
  EXPECT_NEAR(mann_whitney_p_value({1, 2, 2, 3}, {2, 3, 4, 4}), 0.134169, 1e-5);
}

TEST(MannWhitney, IdenticalValuesAreNoEvidence) {
  EXPECT_DOUBLE_EQ(mann_whitney_p_value({5, 5, 5}, {5, 5}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p_value({}, {1, 2}), 1.0);
}

TEST(BootstrapRatio, TwiceAsSlowIsAboutTwo) {
  const RoundSamples base = {{1.0, 1.1, 0.9, 1.05}, {1.02, 0.98, 1.0, 1.01}, {0.97, 1.03, 1.0, 0.99}};
  RoundSamples slow = base;
  for (auto& round : slow)
    for (double& t : round) t *= 2;
  const RatioInterval ci = bootstrap_ratio_of_medians(base, slow, 0.95, 2000, 7);
  EXPECT_GT(ci.low, 1.7);
  EXPECT_LT(ci.high, 2.3);
  EXPECT_LE(ci.low, 2.0);
  EXPECT_GE(ci.high, 2.0);
}

TEST(BootstrapRatio, SameSeedSameInterval) {
  const RoundSamples a = {{1, 2, 3, 4}, {2, 3, 4, 5}}, b = {{1.5, 2.5, 3.5}, {2, 2, 6}};
  const RatioInterval first = bootstrap_ratio_of_medians(a, b, 0.95, 500, 11);
  const RatioInterval second = bootstrap_ratio_of_medians(a, b, 0.95, 500, 11);
  EXPECT_EQ(first.low, second.low);
  EXPECT_EQ(first.high, second.high);
  EXPECT_LT(first.low, first.high);
}

TEST(BootstrapRatio, OneSlowRoundWidensTheInterval) {
  // Steps within a round agree, but the rounds of one arm do not: resampling rounds shows that
  // the evidence is three rounds, not twelve steps.
  const RoundSamples base = {{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}};
  const RoundSamples arm = {{1.0, 1.0, 1.0, 1.0}, {1.0, 1.0, 1.0, 1.0}, {1.5, 1.5, 1.5, 1.5}};
  const RatioInterval ci = bootstrap_ratio_of_medians(base, arm, 0.95, 2000, 3);
  EXPECT_DOUBLE_EQ(ci.low, 1.0);
  EXPECT_DOUBLE_EQ(ci.high, 1.5);
}

}  // namespace
}  // namespace ptdp
