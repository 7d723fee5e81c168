// sched-zb: ZB-H1's op order (the README's tables), its peak activations against 1F1B's, the
// simulated bubbles of ZB-H1 and ZB-H2 against the paper's formulas, and the verifier's refusals
// of split backwards that cannot run.
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
  const plugins::ZeroBubbleScheduler scheduler;  // ZB-H1, the default
  const ScheduleShape shape{4, 1, 8};
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 0), 1),
            "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 1), 1),
            "F0 F1 F2 B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7");
  EXPECT_EQ(ops_text(scheduler.stage_ops(shape, 3), 1),
            "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
}

// The costs the bubble tests use: the paper's T_F = T_B = T_W, and two with a smaller W (T_W <=
// T_F, where the paper's formulas hold). SimulationOptions take the whole backward, T_B + T_W.
const std::vector<SimulationOptions> kZeroBubbleTimes = {
    {1.0, 2.0, 0.0, 1.0, true}, {1.0, 2.0, 0.0, 0.8, true}, {1.0, 2.0, 0.0, 0.5, true}, {2.0, 3.5, 0.0, 1.5, true}};

const plugins::ZeroBubbleScheduler kH1{plugins::ZeroBubbleVariant::H1};
const plugins::ZeroBubbleScheduler kH2{plugins::ZeroBubbleVariant::H2};
const plugins::OneFOneBScheduler kOneFOneB;

int peak_of(const PipelineSchedule& plan) {
  return *std::max_element(plan.report.peak_activations.begin(), plan.report.peak_activations.end());
}

// With transfers posted ahead the simulated ZB-H1 bubble is the paper's (p - 1)·(T_F + T_B - T_W),
// 1F1B's is (p - 1)·(T_F + T_B + T_W), and the peak activations are 1F1B's.
TEST(SchedZb, H1BubbleIsThePapersFormulaAndItsPeakOneF1Bs) {
  for (int p : {4, 8})
    for (int m : {8, 16, 32}) {
      const ScheduleShape shape{p, 1, m};
      SCOPED_TRACE(shape_text(shape));
      const PipelineSchedule zb = plan_schedule(kH1, shape), whole = plan_schedule(kOneFOneB, shape);
      EXPECT_EQ(peak_of(zb), p);
      EXPECT_EQ(peak_of(zb), peak_of(whole));
      for (const SimulationOptions& times : kZeroBubbleTimes) {
        SCOPED_TRACE("t_w = " + std::to_string(times.t_weight));
        const double zb_bubble = simulate_schedule(shape, zb.streams, times).bubble_fraction;
        EXPECT_NEAR(zb_bubble, formula_bubble_fraction_zb_h1(shape, times), 1e-9);
        EXPECT_NEAR(simulate_schedule(shape, whole.streams, times).bubble_fraction, formula_bubble_fraction(shape),
                    1e-9);
      }
    }
}

// ZB-H2: within each stage's span the paper's (p - 1)·(T_F + T_B - 2·T_W) (none at T_F = T_B =
// T_W), for 2p - 1 microbatches of activations. The step's makespan holds the larger of that and
// the (p - 1)·T_F the first forward needs to reach the last stage.
TEST(SchedZb, H2BubbleIsThePapersFormulaForMoreMemory) {
  for (int p : {4, 8})
    for (int m : {8, 16, 32}) {
      if (m < 2 * p - 1) continue;  // too few microbatches to fill the warm-up (the formula's condition)
      const ScheduleShape shape{p, 1, m};
      SCOPED_TRACE(shape_text(shape));
      const PipelineSchedule zb = plan_schedule(kH2, shape);
      EXPECT_EQ(peak_of(zb), 2 * p - 1);
      for (const SimulationOptions& times : kZeroBubbleTimes) {
        SCOPED_TRACE("t_w = " + std::to_string(times.t_weight));
        const SimulationResult r = simulate_schedule(shape, zb.streams, times);
        EXPECT_NEAR(r.span_bubble_fraction, formula_bubble_fraction_zb_h2(shape, times), 1e-9);
        const double ideal = m * (times.t_forward + times.t_backward);
        const double t_f = times.t_forward, t_w = times.weight_time(), t_b = times.t_backward - t_w;
        EXPECT_NEAR(r.bubble_fraction, (p - 1) * std::max(t_f, t_f + t_b - 2 * t_w) / ideal, 1e-9);
      }
    }
}

// The targets at p 4, m 8 with T_F = T_B = T_W: ZB-H1's bubble at most 0.4 of 1F1B's
// (a third), ZB-H2's under a tenth of it.
TEST(SchedZb, BubblesAgainstOneF1BAtFourStagesEightMicrobatches) {
  const ScheduleShape shape{4, 1, 8};
  const SimulationOptions times = kZeroBubbleTimes.front();
  const double one_f_one_b = simulate_schedule(shape, plan_schedule(kOneFOneB, shape).streams, times).bubble_fraction;
  EXPECT_NEAR(one_f_one_b, 3.0 / 8.0, 1e-12);
  EXPECT_NEAR(simulate_schedule(shape, plan_schedule(kH1, shape).streams, times).bubble_fraction / one_f_one_b,
              1.0 / 3.0, 1e-9);
  EXPECT_LT(simulate_schedule(shape, plan_schedule(kH2, shape).streams, times).span_bubble_fraction,
            0.1 * one_f_one_b);
}

// Under blocking groups (the executor's model on a GPU) a stage in a W holds back the neighbour that
// sends to it: ZB-H1 gains little over 1F1B, and never loses.
TEST(SchedZb, BlockingGroupsGiveNoLargerBubbleThanOneF1B) {
  for (const ScheduleShape shape : {ScheduleShape{4, 1, 8}, ScheduleShape{2, 1, 4}, ScheduleShape{8, 1, 16},
                                    ScheduleShape{5, 1, 2}, ScheduleShape{1, 1, 3}}) {
    SCOPED_TRACE(shape_text(shape));
    SimulationOptions times = kZeroBubbleTimes[1];
    times.transfers_posted_ahead = false;
    EXPECT_LE(simulate_schedule(shape, plan_schedule(kH1, shape).streams, times).bubble_fraction,
              simulate_schedule(shape, plan_schedule(kOneFOneB, shape).streams, times).bubble_fraction + 1e-9);
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
  static PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  const auto h2 = create_plugin<Scheduler>(registry.load("sched-zb", PluginKind::Scheduler),
                                           toml::table{{"schedule", "zb-h2"}});
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(plugin->stage_ops({3, 1, 7}, s), kH1.stage_ops({3, 1, 7}, s));
    EXPECT_EQ(h2->stage_ops({3, 1, 7}, s), kH2.stage_ops({3, 1, 7}, s));
  }
  EXPECT_NE(kH1.stage_ops({3, 1, 7}, 0), kH2.stage_ops({3, 1, 7}, 0));
}

std::string refusal_of(const std::vector<std::vector<ComputeOp>>& ops, const ScheduleShape& shape) {
  try {
    verify_schedule(shape, ops, lower_schedule(shape, ops));
    return "";
  } catch (const ScheduleError& e) {
    return e.what();
  }
}

// The scheduler guide's example: GPipe's order with every W held to the end runs, and each
// microbatch's activations count until its W.
TEST(SchedZbVerifier, AcceptsWeightGradientsHeldToTheEnd) {
  constexpr auto F = OpKind::Forward, I = OpKind::BackwardInput, W = OpKind::BackwardWeight;
  const ScheduleShape shape{2, 1, 3};
  const std::vector<ComputeOp> stage{{F, 0, 0}, {F, 1, 0}, {F, 2, 0}, {I, 0, 0}, {I, 1, 0},
                                     {I, 2, 0}, {W, 0, 0}, {W, 1, 0}, {W, 2, 0}};
  const std::vector<std::vector<ComputeOp>> ops{stage, stage};
  EXPECT_EQ(refusal_of(ops, shape), "");
  EXPECT_EQ(verify_schedule(shape, ops, lower_schedule(shape, ops)).peak_activations, (std::vector<int>{3, 3}));
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
