// The LayerKernels conformance suite's cases for a split backward (TransformerBlock::
// backward_input and backward_weight, which zero-bubble schedules run apart): the input part
// touches no parameter gradient, the two parts give what the whole backward gives (bitwise on
// kernels-ref, whose whole backward is the two parts; within rounding elsewhere), and what the
// weight part read is released once it ran; the model split so, under sequence parallelism and
// selective recomputation, gives the whole backward's losses and gradients (FP8 blocks split:
// precision_conformance_test.cpp). A plugin that does not declare the split is skipped, saying so
// (the core then runs a BackwardInput as the whole backward).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <ptdp/activation_recompute.hpp>

#include "conformance_support.hpp"

namespace ptdp::conformance {
namespace {

class SplitBackwardConformance : public KernelsConformance {};

TEST_P(SplitBackwardConformance, InputThenWeightGradientsEqualTheWholeBackward) {
  if (!under_test().create()->splits_backward())
    GTEST_SKIP() << under_test().name << " does not split the backward";
  const ModelSpec m = small_gpt_spec();
  const TensorMap weights = block_weights(m, 3);
  const std::vector<float> x = random_activation(m, 1), dout = random_activation(m, 2);
  const BlockRun whole = run_block(under_test(), m, weights, x, dout);
  const BlockRun split = run_block(under_test(), m, weights, x, dout, DType::F32, true);
  for (const auto& [name, grad] : split.grads_before_weight)
    for (float g : grad.values) ASSERT_EQ(g, 0.0f) << name << " has a gradient before backward_weight ran";
  const bool bitwise = under_test().plugin == reference_kernels().plugin;
  const double tol = bitwise ? 0.0 : tolerances().repeat;
  EXPECT_TRUE(close("block output", split.out, whole.out, tol));
  EXPECT_TRUE(close("input gradient", split.din, whole.din, tol));
  expect_close(split.grads, whole.grads, tol, "weight gradient");
  EXPECT_TRUE(split.weight_inputs_released) << "a second backward_weight of the slot found what the first read";
}

// The model on one and two tensor-parallel ranks, with dropout and without, under each way a
// plugin declares to keep activations (sequence parallelism, recomputing every module): two
// microbatches' backward_input, then both weight parts, on stale gradients, give the whole
// backward's losses and gradients.
TEST_P(SplitBackwardConformance, SplitModelMatchesTheWholeBackwardUnderEachActivationMemorySetting) {
  auto k = under_test().create();
  if (!k->splits_backward()) GTEST_SKIP() << under_test().name << " does not split the backward";
  const uint32_t features = k->activation_memory_features();
  uint32_t every_module = 0;
  for (const auto& module : kRecomputeModules) every_module |= module_bit(module.module);
  std::vector<std::pair<std::string, ActivationMemory>> settings = {{"everything kept", {}}};
  if (features & feature_bit(ActivationMemoryFeature::SequenceParallel))
    settings.push_back({"sequence-parallel", {true, 0}});
  if (features & feature_bit(ActivationMemoryFeature::SelectiveRecompute))
    settings.push_back({"every module recomputed", {false, every_module}});
  const bool bitwise = under_test().plugin == reference_kernels().plugin;
  const double tol = bitwise ? 0.0 : tolerances().repeat;
  for (const ModelSpec& m : with_and_without_dropout()) {
    for (const int tp : {1, 2}) {
      for (const auto& [name, memory] : settings) {
        if (memory.sequence_parallel && tp == 1) continue;
        SCOPED_TRACE("dropout " + std::to_string(m.dropout) + ", tensor-parallel size " + std::to_string(tp) + ", " +
                     name);
        const ModelRun whole = run_model(under_test(), m, tp, 2, Order::AllForwardThenReverse, false, true,
                                         DType::F32, memory);
        const ModelRun split = run_model(under_test(), m, tp, 2, Order::AllForwardThenReverse, false, true,
                                         DType::F32, memory, true);
        EXPECT_TRUE(close("losses", split.losses, whole.losses, tol));
        expect_close(split.grads, whole.grads, tol, "gradient");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, SplitBackwardConformance, ::testing::ValuesIn(kernels_under_test()),
                         [](const ::testing::TestParamInfo<KernelsUnderTest>& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::conformance
