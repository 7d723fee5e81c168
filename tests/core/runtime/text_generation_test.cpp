// How a token is drawn from one position's logits.
#include <gtest/gtest.h>

#include <cmath>

#include <ptdp/counter_rng.hpp>

#include "runtime/text_generation.hpp"

namespace ptdp {
namespace {

TEST(PickToken, TemperatureZeroAndTopOneTakeTheMostLikely) {
  const std::vector<float> logits{0.5f, 3.0f, -1.0f, 2.9f};
  for (float u : {1e-6f, 0.3f, 0.99f, 1.0f}) {
    EXPECT_EQ(pick_token(logits, 0.0f, 0, u), 1);
    EXPECT_EQ(pick_token(logits, 5.0f, 1, u), 1);
  }
}

TEST(PickToken, DrawsFollowTheSoftmaxAtTheTemperature) {
  const std::vector<float> logits{0.0f, 1.0f, 2.0f};
  const float temperature = 2.0f;
  const int draws = 40000;
  std::vector<int> seen(3, 0);
  for (int i = 0; i < draws; ++i) ++seen[pick_token(logits, temperature, 0, rng::uniform(2, 0, i))];
  double z = 0;
  for (float l : logits) z += std::exp(l / temperature);
  for (int id = 0; id < 3; ++id) {
    const double p = std::exp(logits[id] / temperature) / z;
    // Five standard deviations of a binomial count.
    EXPECT_NEAR(seen[id], p * draws, 5 * std::sqrt(draws * p * (1 - p))) << "id " << id;
  }
}

TEST(PickToken, TopKNeverDrawsOutsideTheKMostLikely) {
  const std::vector<float> logits{2.0f, -5.0f, 1.9f, 1.8f, 0.0f};
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 3000; ++i) ++seen[pick_token(logits, 1.0f, 2, rng::uniform(3, 0, i))];
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[2], 0);
  EXPECT_EQ(seen[1] + seen[3] + seen[4], 0);
}

TEST(PickToken, AUniformAtTheEdgesPicksTheFirstAndLastCandidate) {
  const std::vector<float> logits{0.1f, 0.4f, 0.3f, 0.2f};
  EXPECT_EQ(pick_token(logits, 1.0f, 0, 1e-7f), 1);  // most likely first
  EXPECT_EQ(pick_token(logits, 1.0f, 0, 1.0f), 0);   // least likely last
  EXPECT_EQ(pick_token(logits, 1.0f, 3, 1.0f), 3);   // the last of the three kept
}

}  // namespace
}  // namespace ptdp
