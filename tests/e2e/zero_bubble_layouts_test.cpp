// sched-zb, ZB-H1 and ZB-H2, under the layouts it serves: p 2 and 4, with tensor and data
// parallelism, scatter/gather, full and selective recomputation (with and without sequence
// parallelism), and the distributed optimizer each give the losses of one rank within 1e-5, as
// 1F1B does. A handful of layouts, not a cross product: the split backward's parts are
// layout-independent and each is here once.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "one_rank_baseline.hpp"

namespace ptdp::test {
namespace {

struct ZeroBubbleLayout {
  std::string name;
  int ranks;
  std::vector<std::string> sets;
};

void PrintTo(const ZeroBubbleLayout& layout, std::ostream* os) { *os << layout.name; }

class ZeroBubbleLayouts : public AgainstOneRank<ZeroBubbleLayout> {};

TEST_P(ZeroBubbleLayouts, LossesEqualSingleRank) {
  ASSERT_EQ(baseline_->exit_code, 0) << baseline_->output;
  const ZeroBubbleLayout& l = GetParam();
  std::vector<std::string> sets = l.sets;
  sets.push_back("plugins.scheduler=\"sched-zb\"");
  expect_one_rank_losses(workspace_->run(sets, l.ranks), l.name);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ZeroBubbleLayouts,
    ::testing::Values(
        ZeroBubbleLayout{"p2", 2, {"parallel.pipeline=2"}},
        ZeroBubbleLayout{"p4", 4, {"parallel.pipeline=4"}},
        ZeroBubbleLayout{"p4_zb_h2", 4, {"parallel.pipeline=4", "plugins.options.scheduler.schedule=\"zb-h2\""}},
        ZeroBubbleLayout{"p4_d2_zb_h2_selective",
                         8,
                         {"parallel.pipeline=4", "parallel.data=2", "parallel.recompute=\"selective\"",
                          "plugins.options.scheduler.schedule=\"zb-h2\""}},
        ZeroBubbleLayout{"p2_t2_full_recompute_zb_h2",
                         4,
                         {"parallel.pipeline=2", "parallel.tensor=2", "parallel.recompute=\"full\"",
                          "plugins.options.scheduler.schedule=\"zb-h2\""}},
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
