// The step-time model's parts against the formulas they stand for.
#include <gtest/gtest.h>

#include "plan/collective_time.hpp"
#include "plan/memory_model.hpp"
#include "schedule/schedule_simulator.hpp"
#include "plan_test_support.hpp"

namespace ptdp {
namespace {

using namespace ptdp::test;

const ClusterSpec& selene() { return shipped_cluster("a100-selene"); }

// Korthikanti's activations per layer, and without dropout none of its masks: 2·s·b·h fewer
// bytes (replicated, or /t under sequence parallelism) and of the scores' 5·a·s²·b/t only the
// softmax's 2.
TEST(MemoryModel, ActivationsKeepDropoutMasksOnlyWhereTheModelHasDropout) {
  RunConfig::Model with = gpt(24, 2048, 16), without = with;
  without.dropout = 0.0f;
  const double sbh = 2048.0 * 4 * 2048, scores = 16 * 2048.0 * 2048 * 4;
  for (const bool sp : {false, true}) {
    PlanLayout l;
    l.tensor = 4, l.micro_batch = 4, l.sequence_parallel = sp;
    const double masks = 2 * sbh / (sp ? 4 : 1);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(with, l, false), sbh * (10.0 / (sp ? 4 : 1) + 24.0 / 4));
    EXPECT_DOUBLE_EQ(layer_activation_bytes(with, l, false) - layer_activation_bytes(without, l, false), masks);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(with, l, true) - layer_activation_bytes(with, l, false), 5 * scores / 4);
    EXPECT_DOUBLE_EQ(layer_activation_bytes(without, l, true) - layer_activation_bytes(without, l, false),
                     2 * scores / 4);
  }
}

// With uniform stages the simulated bubble is the paper's (p − 1)/(v·m) of the ideal m·(t_f + t_b).
TEST(StepTimeModel, BubbleIsThePapersFormulaOfTheSimulatedSchedule) {
  const RunConfig::Model model = gpt(48, 8192, 64);
  for (const PlanLayout layout : {PlanLayout{4, 8, 1, 1, 1, true, false, true}, PlanLayout{4, 8, 1, 1, 2, true, false, true},
                                  PlanLayout{8, 8, 1, 2, 3, false, false, true}}) {
    const int batch = 64 * layout.micro_batch, m = batch / layout.micro_batch;
    const StageTimes stage = stage_times(model, layout, selene());
    const StepTimeBreakdown t = step_time(model, batch, layout, selene(), simulation());
    const double ideal = m * (stage.forward() + stage.backward());
    EXPECT_NEAR(t.bubble / ideal, (layout.pipeline - 1.0) / (layout.virtual_stages * m), 1e-9) << layout_label(layout);
    EXPECT_NEAR(t.compute + t.tensor_parallel, ideal, 1e-9 * ideal);
    EXPECT_GT(t.pipeline_transfers, 0);
  }
}

// Under a split backward (sched-zb's ZB-H1) W is the weight-gradient GEMMs, below the forward,
// and the bubble is ZB-H1's (p − 1)·(T_F + T_B − T_W) of the simulated schedule, transfers posted
// ahead: less than 1F1B's, for the same compute.
TEST(StepTimeModel, ASplitBackwardHasZbH1sBubbleWithTheWeightGemmsAsW) {
  const RunConfig::Model model = gpt(48, 8192, 64);
  PlanLayout zb{4, 8, 1, 1, 1, false, false, true};
  zb.split_backward = true;
  PlanLayout one_f_one_b = zb;
  one_f_one_b.split_backward = false;
  const int batch = 64, m = 64;
  const StageTimes stage = stage_times(model, zb, selene());
  EXPECT_GT(stage.backward_weight, 0.3 * stage.forward());
  EXPECT_LT(stage.backward_weight, stage.forward());
  const StepTimeBreakdown t = step_time(model, batch, zb, selene(), simulation());
  const StepTimeBreakdown base = step_time(model, batch, one_f_one_b, selene(), simulation());
  const double ideal = m * (stage.forward() + stage.backward());
  SimulationOptions times{stage.forward(), stage.backward(), 0.0, stage.backward_weight};
  // The planner rounds T_W / T_F to three digits for its cache.
  EXPECT_NEAR(t.bubble / ideal, formula_bubble_fraction_zb_h1({4, 1, m}, times), 1e-3 * t.bubble / ideal);
  EXPECT_NEAR(base.bubble / ideal, 3.0 / m, 1e-9);
  EXPECT_DOUBLE_EQ(t.compute, base.compute);
  EXPECT_GT(t.pipeline_transfers, 0);
}

// Recomputation adds one forward to the backward; the tensor all-reduces come with it.
TEST(StepTimeModel, RecomputationAddsOneForward) {
  const RunConfig::Model model = gpt(32, 4096, 32);
  const StageTimes without = stage_times(model, {1, 8, 1, 1, 1, false, false, false}, selene());
  const StageTimes with = stage_times(model, {1, 8, 1, 1, 1, true, false, false}, selene());
  EXPECT_DOUBLE_EQ(with.forward(), without.forward());
  EXPECT_GT(with.backward_tensor_parallel, without.backward_tensor_parallel);
  EXPECT_NEAR(with.backward_tensor_parallel - without.backward_tensor_parallel, without.forward_tensor_parallel, 1e-12);
}

// Scatter/gather sends 1/t over the network and all-gathers on NVLink: cheaper across nodes.
TEST(StepTimeModel, ScatterGatherShrinksTheCrossNodeTransfer) {
  const RunConfig::Model model = gpt(48, 8192, 64);
  const double plain = pipeline_transfer_seconds(model, {4, 8, 1, 1, 1, true, false, false}, selene());
  const double split = pipeline_transfer_seconds(model, {4, 8, 1, 1, 1, true, false, true}, selene());
  const double bytes = 2048.0 * 8192 * 2;
  EXPECT_DOUBLE_EQ(plain, transfer_seconds(bytes, selene().inter_node));
  EXPECT_DOUBLE_EQ(split, transfer_seconds(bytes / 8, selene().inter_node) + all_gather_seconds(bytes, 8, selene().intra_node));
  EXPECT_LT(split, plain / 3);
}

// The distributed optimizer divides the moments by d (the masters stay whole), and shrinks the update.
TEST(StepTimeModel, DistributedOptimizerShardsStateAndUpdate) {
  const RunConfig::Model model = gpt(32, 4096, 32);
  const PlanRequest request{model, 64, 64};
  const PlanCandidate plain = evaluate_layout(request, {1, 8, 8, 1, 1, true, false, false}, selene(), simulation());
  const PlanCandidate sharded = evaluate_layout(request, {1, 8, 8, 1, 1, true, true, false}, selene(), simulation());
  // Master weights and moments, 12 bytes a parameter, are cut into d shards.
  EXPECT_DOUBLE_EQ(sharded.memory.optimizer_state, plain.memory.optimizer_state / 8);
  // The kernels keep the embeddings' fp32 values for their lookups: 4 bytes of each.
  const double embedding = model.vocab / 8.0 * model.hidden + double(model.seq_len) * model.hidden;  // t 8
  EXPECT_DOUBLE_EQ(sharded.memory.weights, plain.memory.weights + 4 * embedding);
  EXPECT_DOUBLE_EQ(sharded.time.optimizer, plain.time.optimizer / 8);
  EXPECT_DOUBLE_EQ(plain.memory.weights + plain.memory.gradients + plain.memory.optimizer_state,
                   18 * parameters_on_gpu(model, plain.layout, 0));
}

}  // namespace
}  // namespace ptdp
