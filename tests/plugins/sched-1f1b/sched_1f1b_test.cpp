#include <gtest/gtest.h>

#include <algorithm>

#include "one_f_one_b_scheduler.hpp"
#include "scheduler_checks.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

TEST(Sched1F1B, StagesOfThePapersFigure4) {
  const plugins::OneFOneBScheduler scheduler;
  const ScheduleShape shape{4, 1, 8};
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 0), 1), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 1), 1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 3), 1), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

TEST(Sched1F1B, FewerMicrobatchesThanStagesWarmUpWithAllOfThem) {
  const plugins::OneFOneBScheduler scheduler;
  EXPECT_EQ(ops_text(scheduler.stage_ops({5, 1, 2}, 0), 1), "F0 F1 B0 B1");
  EXPECT_EQ(ops_text(scheduler.stage_ops({5, 1, 2}, 3), 1), "F0 F1 B0 B1");
  EXPECT_EQ(ops_text(scheduler.stage_ops({5, 1, 2}, 4), 1), "F0 B0 F1 B1");
  EXPECT_EQ(ops_text(scheduler.stage_ops({1, 1, 3}, 0), 1), "F0 B0 F1 B1 F2 B2");
}

TEST(Sched1F1B, RefusalsSayWhatToChange) {
  const plugins::OneFOneBScheduler scheduler;
  EXPECT_EQ(refusal(scheduler, {4, 2, 8}), "sched-1f1b runs one model chunk per stage, got v = 2: set v = 1, or use "
                                           "sched-interleaved for v >= 2");
  EXPECT_EQ(refusal(scheduler, {4, 1, 8}, 4), "sched-1f1b: stage 4 is out of range 0..3");
  EXPECT_EQ(refusal(scheduler, {4, 1, 0}), "sched-1f1b: p = 4, v = 1, m = 0: every one must be at least 1");
}

TEST(Sched1F1B, PluginServesTheSameOpsAsTheAlgorithm) {
  const auto plugin = load_scheduler("sched-1f1b");
  const plugins::OneFOneBScheduler scheduler;
  for (int s = 0; s < 3; ++s) EXPECT_EQ(plugin->stage_ops({3, 1, 7}, s), scheduler.stage_ops({3, 1, 7}, s));
  EXPECT_EQ(refusal(*plugin, {3, 3, 7}), refusal(scheduler, {3, 3, 7}));
}

// Every p in 1..8, v in 1..4, m in 1..32: one chunk is verified, has the paper's bubble and
// keeps min(p - s, m) microbatches alive on stage s; more chunks are refused.
TEST(Sched1F1B, ExhaustiveShapes) {
  const auto plugin = load_scheduler("sched-1f1b");
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 32; ++m) {
      std::vector<int> peaks;
      ASSERT_TRUE(verified_with_paper_bubble(*plugin, {p, 1, m}, &peaks));
      for (int s = 0; s < p; ++s) EXPECT_EQ(peaks[s], std::min(p - s, m)) << "p=" << p << " m=" << m << " s=" << s;
      for (int v = 2; v <= 4; ++v)
        EXPECT_NE(refusal(*plugin, {p, v, m}).find("use sched-interleaved"), std::string::npos);
    }
}

}  // namespace
}  // namespace ptdp
