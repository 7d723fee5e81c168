// sched-zb: ZB-H1's op order (the README's tables), its verification, its peak activations
// against 1F1B's and its simulated bubble, and the verifier's refusals of split backwards that
// cannot run.
#include <gtest/gtest.h>

#include <algorithm>

#include "one_f_one_b_scheduler.hpp"
#include "scheduler_checks.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_verifier.hpp"
#include "zero_bubble_scheduler.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

TEST(SchedZb, StagesOfTheReadmeTable) {
  const plugins::ZeroBubbleScheduler scheduler;
  const ScheduleShape shape{4, 1, 8};
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 0), 1),
            "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 1), 1),
            "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 3), 1),
            "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
}

TEST(SchedZb, VerifiedWithOneF1BsPeakAndNoLargerBubble) {
  const plugins::ZeroBubbleScheduler zb;
  const plugins::OneFOneBScheduler one_f_one_b;
  for (const ScheduleShape shape : {ScheduleShape{4, 1, 8}, ScheduleShape{2, 1, 4}, ScheduleShape{8, 1, 16},
                                    ScheduleShape{4, 1, 32}, ScheduleShape{5, 1, 2}, ScheduleShape{1, 1, 3}}) {
    SCOPED_TRACE(shape_text(shape));
    const PipelineSchedule split = plan_schedule(zb, shape);
    const PipelineSchedule whole = plan_schedule(one_f_one_b, shape);
    const auto& peaks = split.report.peak_activations;
    EXPECT_EQ(*std::max_element(peaks.begin(), peaks.end()),
              *std::max_element(whole.report.peak_activations.begin(), whole.report.peak_activations.end()));
    for (const SimulationOptions& times : {SimulationOptions{1.0, 2.0, 0.0}, SimulationOptions{1.0, 2.5, 0.0, 1.0}}) {
      const double zb_bubble = simulate_schedule(shape, split.streams, times).bubble_fraction;
      const double one_f_one_b_bubble = simulate_schedule(shape, whole.streams, times).bubble_fraction;
      EXPECT_LE(zb_bubble, one_f_one_b_bubble + 1e-9);
    }
  }
}

TEST(SchedZb, RefusalsSayWhatToChange) {
  const plugins::ZeroBubbleScheduler scheduler;
  EXPECT_EQ(refusal(scheduler, {4, 2, 8}),
            "sched-zb runs one model chunk per stage, got v = 2: set parallel.virtual_stages = 1, or use "
            "sched-interleaved for v >= 2");
  EXPECT_EQ(refusal(scheduler, {4, 1, 8}, 4), "sched-zb: stage 4 is out of range 0..3");
}

TEST(SchedZb, PluginServesTheSameOpsAsTheAlgorithm) {
  const auto plugin = load_scheduler("sched-zb");
  const plugins::ZeroBubbleScheduler scheduler;
  for (int s = 0; s < 3; ++s) EXPECT_EQ(plugin->stage_ops({3, 1, 7}, s), scheduler.stage_ops({3, 1, 7}, s));
}

std::string refusal_of(const std::vector<std::vector<ComputeOp>>& ops, const ScheduleShape& shape) {
  try {
    verify_schedule(shape, ops, lower_schedule(shape, ops));
    return "";
  } catch (const ScheduleError& e) {
    return e.what();
  }
}

TEST(SchedZbVerifier, RefusesAWeightGradientBeforeItsInputGradient) {
  constexpr auto F = OpKind::Forward, I = OpKind::BackwardInput, W = OpKind::BackwardWeight;
  const ScheduleShape shape{2, 1, 1};
  EXPECT_EQ(refusal_of({{{F, 0, 0}, {W, 0, 0}, {I, 0, 0}}, {{F, 0, 0}, {I, 0, 0}, {W, 0, 0}}}, shape),
            "stage 0, op 1 (W0): BackwardWeight of microbatch 0, chunk 0 runs before its BackwardInput (op 2)");
}

TEST(SchedZbVerifier, RefusesADroppedWeightGradient) {
  constexpr auto F = OpKind::Forward, I = OpKind::BackwardInput, W = OpKind::BackwardWeight;
  const ScheduleShape shape{2, 1, 1};
  EXPECT_EQ(refusal_of({{{F, 0, 0}, {I, 0, 0}, {W, 0, 0}}, {{F, 0, 0}, {I, 0, 0}}}, shape),
            "stage 1: the schedule drops the BackwardWeight of microbatch 0, chunk 0 (its BackwardInput is op 1)");
}

TEST(SchedZbVerifier, RefusesAWholeAndASplitBackwardOfOneMicrobatch) {
  constexpr auto F = OpKind::Forward, B = OpKind::Backward, I = OpKind::BackwardInput, W = OpKind::BackwardWeight;
  const ScheduleShape shape{1, 1, 1};
  EXPECT_EQ(refusal_of({{{F, 0, 0}, {B, 0, 0}, {I, 0, 0}, {W, 0, 0}}}, shape),
            "stage 0, op 2 (B0): BackwardInput of microbatch 0, chunk 0 after its Backward (op 1): a microbatch's "
            "backward runs whole or split into BackwardInput and BackwardWeight, not both");
  EXPECT_EQ(refusal_of({{{F, 0, 0}, {B, 0, 0}, {W, 0, 0}}}, shape),
            "stage 0, op 2 (W0): BackwardWeight of microbatch 0, chunk 0 has no BackwardInput on this stage: its whole "
            "Backward (op 1) already computed the weight gradients");
}

}  // namespace
}  // namespace ptdp
