// The planner's simulation of long steps: extrapolated from two short replays, it must give what
// replaying the whole step gives, for every stock scheduler (sched-zb's split backward with
// transfers posted ahead), with and without transfer latency.
#include <gtest/gtest.h>

#include <memory>

#include "plan_test_support.hpp"
#include "plugin/plugin_factory.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {
namespace {

struct Replay {
  double makespan;
  std::vector<int> peaks;
};

// The whole step, lowered, verified and simulated as `schedule` and a run do it.
Replay replay_whole(const ScheduleShape& shape, bool split, double backward_ratio, double weight_ratio, double latency) {
  PipelineSimulation planner({PTDP_TEST_PLUGIN_DIR});
  const PipelineSchedule schedule = plan_schedule(planner.scheduler_for(shape, split), shape);
  SimulationOptions options{1.0, backward_ratio, latency, weight_ratio};
  options.transfers_posted_ahead = split;
  return {simulate_schedule(shape, schedule.streams, options).makespan, schedule.report.peak_activations};
}

TEST(PipelineSimulation, ALongStepIsExtrapolatedExactly) {
  PipelineSimulation simulation({PTDP_TEST_PLUGIN_DIR});
  // 1F1B with m not a multiple of p, and interleaved shapes, all past kLongStepGroups groups;
  // ZB-H1 (v = 1 only) with W a quarter and a half of the backward.
  struct Case {
    ScheduleShape shape;
    bool split;
    double weight;
  };
  for (const Case c : {Case{{4, 1, 103}, false, 0}, Case{{8, 1, 64}, false, 0}, Case{{4, 2, 48}, false, 0},
                       Case{{3, 4, 36}, false, 0}, Case{{2, 3, 40}, false, 0}, Case{{4, 1, 103}, true, 0.5},
                       Case{{8, 1, 64}, true, 1.0}, Case{{3, 1, 40}, true, 0.8}}) {
    const ScheduleShape& shape = c.shape;
    ASSERT_GT(shape.microbatches, PipelineSimulation::kLongStepGroups * shape.stages);
    for (const double latency : {0.0, 0.05, 0.7}) {
      const Replay whole = replay_whole(shape, c.split, 2.0, c.weight, latency);
      const std::string label = "p " + std::to_string(shape.stages) + " v " + std::to_string(shape.chunks) + " m " +
                                std::to_string(shape.microbatches) + (c.split ? " split" : "") + " latency " +
                                std::to_string(latency);
      EXPECT_NEAR(simulation.makespan(shape, c.split, 2.0, c.weight, latency), whole.makespan, 1e-9 * whole.makespan)
          << label;
      EXPECT_EQ(simulation.peak_activations(shape, c.split), whole.peaks) << label;
    }
  }
}

// The schedulers say which shapes they serve with a split backward: sched-zb, one chunk per stage.
TEST(PipelineSimulation, TheSplitBackwardIsSchedZbsAndOnlyWithOneChunkPerStage) {
  PipelineSimulation simulation({PTDP_TEST_PLUGIN_DIR});
  EXPECT_EQ(simulation.scheduler_name({4, 1, 8}, false), "sched-1f1b");
  EXPECT_EQ(simulation.scheduler_name({4, 2, 8}, false), "sched-interleaved");
  EXPECT_EQ(simulation.scheduler_name({4, 1, 8}, true), "sched-zb");
  EXPECT_EQ(simulation.scheduler_name({4, 2, 8}, true), std::nullopt);
  std::string refusal = "none";
  try {
    simulation.scheduler_for({4, 2, 8}, true);
  } catch (const Error& e) {
    refusal = e.what();
  }
  // Each plugin's own refusal follows: sched-zb's says it runs one chunk per stage.
  EXPECT_NE(refusal.find("no stock scheduler serves p=4 v=2 m=8 with a split backward: "), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("sched-zb runs one model chunk per stage"), std::string::npos) << refusal;
}

// Under transfers posted ahead, ZB-H1's W fills the bubble: with T_F = T_B = T_W its bubble is
// a third of 1F1B's (p - 1)·(T_F + T_B + T_W), and its peak activations are p on every stage.
TEST(PipelineSimulation, ZeroBubbleCutsTheBubbleForItsPeakActivations) {
  PipelineSimulation simulation({PTDP_TEST_PLUGIN_DIR});
  const ScheduleShape shape{4, 1, 16};
  const double ideal = 16 * 3.0;
  const double one_f_one_b = simulation.makespan(shape, false, 2.0, 1.0, 0.0) - ideal;
  const double zero_bubble = simulation.makespan(shape, true, 2.0, 1.0, 0.0) - ideal;
  EXPECT_NEAR(one_f_one_b, 3 * 3.0, 1e-9);
  EXPECT_NEAR(zero_bubble, 3 * 1.0, 1e-9);
  EXPECT_EQ(simulation.peak_activations(shape, true), (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(simulation.peak_activations(shape, false), (std::vector<int>{4, 3, 2, 1}));
}

TEST(PipelineSimulation, AShortStepIsReplayedWhole) {
  const ScheduleShape shape{4, 2, 8};
  EXPECT_EQ(PipelineSimulation::simulated_shape(shape).microbatches, 8);
  EXPECT_EQ(PipelineSimulation::simulated_shape({4, 2, 4000}).microbatches, 4 * PipelineSimulation::kLongStepGroups);
}

}  // namespace
}  // namespace ptdp
