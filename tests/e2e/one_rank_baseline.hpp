#pragma once
// The fixture of the layout suites: one tiny workspace and its one-rank run for the whole suite,
// against which every layout's losses are compared (the strict semantics every layout keeps).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "host_run.hpp"

namespace ptdp::test {

template <class Param>
class AgainstOneRank : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() {
    workspace_ = new TinyGptWorkspace();
    baseline_ = new HostRun(workspace_->run({}, 1));
  }
  static void TearDownTestSuite() {
    delete baseline_;
    delete workspace_;
  }

  // Every step's loss of `run` within 1e-5 (relative) of the one-rank run's.
  static void expect_one_rank_losses(const HostRun& run, const std::string& layout) {
    ASSERT_EQ(run.exit_code, 0) << run.output;
    ASSERT_EQ(run.losses.size(), baseline_->losses.size()) << run.output;
    for (size_t i = 0; i < run.losses.size(); ++i)
      EXPECT_NEAR(run.losses[i], baseline_->losses[i], 1e-5 * std::abs(baseline_->losses[i]))
          << "step " << i + 1 << " of " << layout;
  }

  static inline TinyGptWorkspace* workspace_ = nullptr;
  static inline HostRun* baseline_ = nullptr;
};

}  // namespace ptdp::test
