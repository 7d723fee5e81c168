// sched-zb under the layouts it serves: pipeline with tensor and data parallelism, scatter/gather,
// full and selective recomputation with sequence parallelism, and the distributed optimizer each
// give the losses of one rank within float rounding, as 1F1B does. A handful of layouts, not a
// cross product: the split backward's parts are layout-independent and each is here once.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

struct ZeroBubbleLayout {
  std::string name;
  int ranks;
  std::vector<std::string> sets;
};

class ZeroBubbleLayouts : public ::testing::TestWithParam<ZeroBubbleLayout> {
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
TinyGptWorkspace* ZeroBubbleLayouts::workspace_ = nullptr;
HostRun* ZeroBubbleLayouts::baseline_ = nullptr;

TEST_P(ZeroBubbleLayouts, LossesEqualSingleRank) {
  ASSERT_EQ(baseline_->exit_code, 0) << baseline_->output;
  const ZeroBubbleLayout& l = GetParam();
  std::vector<std::string> sets = l.sets;
  sets.push_back("plugins.scheduler=\"sched-zb\"");
  const HostRun run = workspace_->run(sets, l.ranks);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_EQ(run.losses.size(), baseline_->losses.size()) << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], baseline_->losses[i], 1e-5 * std::abs(baseline_->losses[i]))
        << "step " << i + 1 << " of " << l.name;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ZeroBubbleLayouts,
    ::testing::Values(
        ZeroBubbleLayout{"p2", 2, {"parallel.pipeline=2"}},
        ZeroBubbleLayout{"p4_full_recompute", 4, {"parallel.pipeline=4", "parallel.recompute=\"full\""}},
        ZeroBubbleLayout{"p2_t2_d2_scatter_gather_distributed_optimizer",
                         8,
                         {"parallel.pipeline=2", "parallel.tensor=2", "parallel.data=2", "parallel.scatter_gather=true",
                          "parallel.distributed_optimizer=true"}},
        ZeroBubbleLayout{"p2_t2_sequence_parallel_selective",
                         4,
                         {"parallel.pipeline=2", "parallel.tensor=2", "parallel.sequence_parallel=true",
                          "parallel.recompute=\"selective\""}}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::test
