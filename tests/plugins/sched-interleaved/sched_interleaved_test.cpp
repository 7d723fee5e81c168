#include <gtest/gtest.h>

#include <algorithm>

#include "interleaved_scheduler.hpp"
#include "scheduler_checks.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

TEST(SchedInterleaved, StagesOfThePapersFigure4) {
  // Figure 4 (bottom) numbers microbatches from 1 and shades chunk 1 dark, chunk 2 light.
  const plugins::InterleavedScheduler scheduler;
  const ScheduleShape shape{4, 2, 8};
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 0), 2),
            "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 "
            "F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 3), 2),
            "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
            "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0");
}

TEST(SchedInterleaved, AsManyMicrobatchesAsStagesRunAllForwardsFirst) {
  const plugins::InterleavedScheduler scheduler;
  EXPECT_EQ(ops_text(scheduler.stage_ops({2, 2, 2}, 1), 2), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

TEST(SchedInterleaved, OneStageRunsItsChunksInOrder) {
  const plugins::InterleavedScheduler scheduler;
  EXPECT_EQ(ops_text(scheduler.stage_ops({1, 3, 2}, 0), 3),
            "F0.0 F0.1 F0.2 B0.2 F1.0 B0.1 F1.1 B0.0 F1.2 B1.2 B1.1 B1.0");
}

TEST(SchedInterleaved, RefusalsSayWhatToChange) {
  const plugins::InterleavedScheduler scheduler;
  EXPECT_EQ(refusal(scheduler, {4, 2, 6}),
            "sched-interleaved needs m to be a multiple of p (m % p == 0), got m = 6, p = 4: use m = 4 or m = 8");
  EXPECT_EQ(refusal(scheduler, {4, 2, 3}),
            "sched-interleaved needs m to be a multiple of p (m % p == 0), got m = 3, p = 4: use m = 4");
  EXPECT_EQ(refusal(scheduler, {4, 1, 8}),
            "sched-interleaved needs at least 2 model chunks per stage, got v = 1: set v >= 2, or use sched-1f1b "
            "for v = 1");
  EXPECT_EQ(refusal(scheduler, {4, 2, 8}, -1), "sched-interleaved: stage -1 is out of range 0..3");
  EXPECT_EQ(refusal(scheduler, {0, 2, 8}), "sched-interleaved: p = 0, v = 2, m = 8: every one must be at least 1");
}

TEST(SchedInterleaved, PaperBubbleTable) {
  const auto plugin = load_scheduler("sched-interleaved");
  struct Row {
    ScheduleShape shape;
    double bubble;
  };
  for (const Row& row : {Row{{4, 2, 8}, 0.1875}, Row{{4, 4, 8}, 0.09375}, Row{{2, 2, 4}, 0.125},
                         Row{{8, 2, 16}, 7.0 / 32}, Row{{3, 3, 9}, 2.0 / 27}, Row{{8, 4, 32}, 7.0 / 128},
                         Row{{4, 2, 4}, 0.375}, Row{{1, 2, 5}, 0.0}}) {
    const PipelineSchedule plan = plan_schedule(*plugin, row.shape);
    EXPECT_NEAR(simulate_schedule(row.shape, plan.streams, {}).bubble_fraction, row.bubble, 1e-12)
        << shape_text(row.shape);
  }
}

TEST(SchedInterleaved, PluginServesTheSameOpsAsTheAlgorithm) {
  const auto plugin = load_scheduler("sched-interleaved");
  const plugins::InterleavedScheduler scheduler;
  for (int s = 0; s < 4; ++s) EXPECT_EQ(plugin->stage_ops({4, 3, 12}, s), scheduler.stage_ops({4, 3, 12}, s));
  EXPECT_EQ(refusal(*plugin, {4, 3, 10}), refusal(scheduler, {4, 3, 10}));
}

// Every p in 1..8, v in 1..4, m in 1..32: served when v >= 2 and p divides m, then verified, with
// the paper's bubble and warm-up + 1 chunk activations alive at the peak; refused otherwise.
TEST(SchedInterleaved, ExhaustiveShapes) {
  const auto plugin = load_scheduler("sched-interleaved");
  for (int p = 1; p <= 8; ++p)
    for (int v = 1; v <= 4; ++v)
      for (int m = 1; m <= 32; ++m) {
        const ScheduleShape shape{p, v, m};
        if (v < 2 || m % p != 0) {
          EXPECT_NE(refusal(*plugin, shape), "") << shape_text(shape);
          continue;
        }
        std::vector<int> peaks;
        ASSERT_TRUE(verified_with_paper_bubble(*plugin, shape, &peaks));
        for (int s = 0; s < p; ++s) {
          const int warmup = m == p ? m * v : std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
          EXPECT_EQ(peaks[s], std::min(warmup + 1, m * v)) << shape_text(shape) << " stage " << s;
        }
      }
}

}  // namespace
}  // namespace ptdp
