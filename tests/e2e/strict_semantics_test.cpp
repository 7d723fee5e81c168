// Strict optimizer semantics: for the same global batch, seed and model, every layout
// (p, t, d, v, scatter/gather, recomputation) gives the losses of one rank within float
// rounding. This is the property the whole system is built to keep.
#include <gtest/gtest.h>

#include <cmath>

#include "host_run.hpp"
#include "layout.hpp"

namespace ptdp::test {
namespace {

class StrictSemantics : public ::testing::TestWithParam<Layout> {
 protected:
  static void SetUpTestSuite() {
    workspace_ = new TinyGptWorkspace();
    baseline_ = new HostRun(workspace_->run({}, 1));
  }
  static void TearDownTestSuite() {
    delete baseline_;
    delete workspace_;
  }
  static TinyGptWorkspace* workspace_;
  static HostRun* baseline_;
};
TinyGptWorkspace* StrictSemantics::workspace_ = nullptr;
HostRun* StrictSemantics::baseline_ = nullptr;

TEST_P(StrictSemantics, LossesEqualSingleRank) {
  ASSERT_EQ(baseline_->exit_code, 0) << baseline_->output;
  ASSERT_EQ(baseline_->losses.size(), 5u) << baseline_->output;
  EXPECT_LT(baseline_->losses.back(), baseline_->losses.front()) << "the single-rank run does not learn";
  const Layout l = GetParam();
  const HostRun run = workspace_->run(l.sets(), l.ranks());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.losses.size(), baseline_->losses.size()) << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], baseline_->losses[i], 1e-5 * std::abs(baseline_->losses[i]))
        << "step " << i + 1 << " of " << l.name();
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
