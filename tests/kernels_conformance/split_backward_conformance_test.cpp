// The LayerKernels conformance suite's cases for a split backward (TransformerBlock::
// backward_input and backward_weight, which zero-bubble schedules run apart): the input part
// touches no parameter gradient, the two parts give what the whole backward gives (bitwise on
// kernels-ref, whose whole backward is the two parts; within rounding elsewhere), and what the
// weight part read is released once it ran. A plugin that does not declare the split is skipped,
// saying so (the core then runs a BackwardInput as the whole backward).
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

INSTANTIATE_TEST_SUITE_P(Plugins, SplitBackwardConformance, ::testing::ValuesIn(kernels_under_test()),
                         [](const ::testing::TestParamInfo<KernelsUnderTest>& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::conformance
