// The SDK's worked example, examples/sched-gpipe, held to what every scheduler must give.
#include <gtest/gtest.h>

#include "scheduler_checks.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

std::shared_ptr<Scheduler> gpipe() { return load_scheduler(SCHED_GPIPE_PLUGIN); }

TEST(SchedGPipe, AllForwardsThenAllBackwards) {
  EXPECT_EQ(ops_text(gpipe()->stage_ops({4, 1, 4}, 2), 1), "F0 F1 F2 F3 B3 B2 B1 B0");
}

TEST(SchedGPipe, RefusesChunks) {
  EXPECT_EQ(refusal(*gpipe(), {4, 2, 8}),
            "sched-gpipe serves one model chunk per stage (got 2); set parallel.virtual_stages = 1");
}

// Every p in 1..8, m in 1..32: verified, the paper's bubble, all m microbatches alive at once.
TEST(SchedGPipe, ExhaustiveShapes) {
  const auto plugin = gpipe();
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 32; ++m) {
      std::vector<int> peaks;
      ASSERT_TRUE(verified_with_paper_bubble(*plugin, {p, 1, m}, &peaks));
      EXPECT_EQ(peaks, std::vector<int>(p, m)) << "p=" << p << " m=" << m;
      for (int v = 2; v <= 4; ++v) EXPECT_NE(refusal(*plugin, {p, v, m}), "");
    }
}

}  // namespace
}  // namespace ptdp
