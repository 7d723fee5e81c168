// The order of an A/B's jobs: every arm once per round, the order reversed every other round.
#include <gtest/gtest.h>

#include "ab/ab_runner.hpp"

namespace ptdp {
namespace {

TEST(CounterbalancedOrder, AbbaForTwoArms) {
  const std::vector<std::vector<size_t>> expected = {{0, 1}, {1, 0}, {0, 1}, {1, 0}, {0, 1}};
  EXPECT_EQ(counterbalanced_order(2, 5), expected);
}

TEST(CounterbalancedOrder, MirroredForThreeArms) {
  const std::vector<std::vector<size_t>> expected = {{0, 1, 2}, {2, 1, 0}};
  EXPECT_EQ(counterbalanced_order(3, 2), expected);
}

}  // namespace
}  // namespace ptdp
