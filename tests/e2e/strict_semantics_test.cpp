// Strict optimizer semantics: for the same global batch, seed and model, every layout
// (p, t, d, v, scatter/gather, recomputation) gives the losses of one rank within float
// rounding. This is the property the whole system is built to keep.
#include <gtest/gtest.h>

#include "layout.hpp"
#include "one_rank_baseline.hpp"

namespace ptdp::test {
namespace {

class StrictSemantics : public AgainstOneRank<Layout> {};

TEST_P(StrictSemantics, LossesEqualSingleRank) {
  ASSERT_EQ(baseline_->exit_code, 0) << baseline_->output;
  ASSERT_EQ(baseline_->losses.size(), 5u) << baseline_->output;
  EXPECT_LT(baseline_->losses.back(), baseline_->losses.front()) << "the single-rank run does not learn";
  const Layout l = GetParam();
  expect_one_rank_losses(workspace_->run(l.sets(), l.ranks()), l.name());
}

INSTANTIATE_TEST_SUITE_P(Layouts, StrictSemantics,
                         ::testing::Values(Layout{1, 1, 1, 1, false, true}, Layout{2, 1, 1, 1, false, false},
                                           Layout{1, 2, 1, 1, false, false}, Layout{1, 1, 2, 1, false, false},
                                           Layout{2, 2, 2, 1, false, false}, Layout{4, 1, 1, 2, false, false},
                                           Layout{2, 2, 1, 2, true, false}, Layout{2, 2, 2, 2, true, true},
                                           Layout{4, 2, 1, 1, true, true}),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace ptdp::test
