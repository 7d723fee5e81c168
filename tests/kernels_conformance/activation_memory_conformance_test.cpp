// The LayerKernels conformance suite's cases for what a plugin declares to cut activation memory
// (ptdp/activation_recompute.hpp): under sequence parallelism the LayerNorms, dropouts and
// residual adds run on each rank's rows of the sequence and the regions between them reduce-
// scatter and all-gather, and the model on two and four ranks gives kernels-ref's one-rank losses
// and gradients; selective recomputation of each module gives what keeping everything gives. A
// plugin that does not declare a feature is skipped for it, saying so (the core refuses the
// manifest key for it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <ptdp/activation_recompute.hpp>

#include "conformance_support.hpp"

namespace ptdp::conformance {
namespace {

class ActivationMemoryConformance : public KernelsConformance {
 protected:
  bool declares(ActivationMemoryFeature f) const {
    return (under_test().create()->activation_memory_features() & feature_bit(f)) != 0;
  }
  static ModelSpec without_dropout() {
    ModelSpec m = small_gpt_spec();
    m.dropout = 0.0f;
    return m;
  }
};

// The sharded LayerNorm and dropout regions: dropout draws each rank's rows' masks, the
// LayerNorm weights' and the row-parallel biases' gradients are each rank's rows' share (summed
// over the group after the step, as the core does), and the embedding's output and the head's
// input are the rank's rows.
TEST_P(ActivationMemoryConformance, SequenceParallelRanksMatchTheReference) {
  if (!declares(ActivationMemoryFeature::SequenceParallel))
    GTEST_SKIP() << under_test().name << " declares no sequence parallelism";
  const Tolerances tol = tolerances();
  for (const ModelSpec& m : {small_gpt_spec(), without_dropout()}) {
    SCOPED_TRACE("dropout " + std::to_string(m.dropout));
    const ModelRun want = run_model(reference_kernels(), m, 1, 2);
    for (int tp : {2, 4}) {
      SCOPED_TRACE("tensor-parallel size " + std::to_string(tp));
      const ModelRun got =
          run_model(under_test(), m, tp, 2, Order::AllForwardThenReverse, false, false, DType::F32, {true, 0});
      EXPECT_TRUE(close("loss", got.losses, want.losses, tol.loss));
      expect_close(got.grads, want.grads, tol.model_grad, "gradient");
      expect_padding_has_no_gradient(got.grads, m);
    }
  }
}

TEST_P(ActivationMemoryConformance, SelectiveRecomputationOfEachModuleMatchesKeepingEverything) {
  if (!declares(ActivationMemoryFeature::SelectiveRecompute))
    GTEST_SKIP() << under_test().name << " declares no selective recomputation";
  const Tolerances tol = tolerances();
  const ModelSpec m = small_gpt_spec();
  const bool sequence_parallel = declares(ActivationMemoryFeature::SequenceParallel);
  uint32_t all = 0;
  for (const auto& module : kRecomputeModules) all |= module_bit(module.module);
  for (const bool sp : {false, sequence_parallel}) {
    SCOPED_TRACE(sp ? "sequence-parallel" : "tensor-parallel");
    const ModelRun kept = run_model(under_test(), m, 2, 2, Order::AllForwardThenReverse, false, false, DType::F32,
                                    {sp, 0});
    std::vector<std::pair<std::string, uint32_t>> choices;
    for (const auto& module : kRecomputeModules) choices.emplace_back(module.name, module_bit(module.module));
    choices.emplace_back("every module", all);
    for (const auto& [name, bits] : choices) {
      const ModelRun recomputed = run_model(under_test(), m, 2, 2, Order::AllForwardThenReverse, false, false,
                                            DType::F32, {sp, bits});
      // A recomputed GeLU may come from another kernel than the forward's: kernels-fused's
      // gelu_epilogue option takes the forward's from cuBLASLt's epilogue and the recomputed one
      // from its own kernel, one rounding of the activation type apart, which moved FC2's weight
      // gradient by 2.6e-3 on an H100 (2026-12-05). Everything else recomputes its own bits.
      const double tolerance = (bits & module_bit(RecomputeModule::MlpActivation)) ? tol.block_output : tol.repeat;
      EXPECT_TRUE(close("losses recomputing " + name, recomputed.losses, kept.losses, tolerance));
      expect_close(recomputed.grads, kept.grads, tolerance, "gradient recomputing " + name);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Plugins, ActivationMemoryConformance, ::testing::ValuesIn(kernels_under_test()),
                         [](const ::testing::TestParamInfo<KernelsUnderTest>& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::conformance
