// The planner's simulation of long steps: extrapolated from two short replays, it must give what
// replaying the whole step gives, for both stock schedulers, with and without transfer latency.
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
Replay replay_whole(const ScheduleShape& shape, double backward_ratio, double latency) {
  PipelineSimulation planner({PTDP_TEST_PLUGIN_DIR});
  const PipelineSchedule schedule = plan_schedule(planner.scheduler_for(shape), shape);
  return {simulate_schedule(shape, schedule.streams, {1.0, backward_ratio, latency}).makespan,
          schedule.report.peak_activations};
}

TEST(PipelineSimulation, ALongStepIsExtrapolatedExactly) {
  PipelineSimulation simulation({PTDP_TEST_PLUGIN_DIR});
  // 1F1B with m not a multiple of p, and interleaved shapes, all past kLongStepGroups groups.
  for (const ScheduleShape shape : {ScheduleShape{4, 1, 103}, ScheduleShape{8, 1, 64}, ScheduleShape{4, 2, 48},
                                    ScheduleShape{3, 4, 36}, ScheduleShape{2, 3, 40}}) {
    ASSERT_GT(shape.microbatches, PipelineSimulation::kLongStepGroups * shape.stages);
    for (const double latency : {0.0, 0.05, 0.7}) {
      const Replay whole = replay_whole(shape, 2.0, latency);
      const std::string label = "p " + std::to_string(shape.stages) + " v " + std::to_string(shape.chunks) + " m " +
                                std::to_string(shape.microbatches) + " latency " + std::to_string(latency);
      EXPECT_NEAR(simulation.makespan(shape, 2.0, latency), whole.makespan, 1e-9 * whole.makespan) << label;
      EXPECT_EQ(simulation.peak_activations(shape), whole.peaks) << label;
    }
  }
}

TEST(PipelineSimulation, AShortStepIsReplayedWhole) {
  const ScheduleShape shape{4, 2, 8};
  EXPECT_EQ(PipelineSimulation::simulated_shape(shape).microbatches, 8);
  EXPECT_EQ(PipelineSimulation::simulated_shape({4, 2, 4000}).microbatches, 4 * PipelineSimulation::kLongStepGroups);
}

}  // namespace
}  // namespace ptdp
