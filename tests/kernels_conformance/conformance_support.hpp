#pragma once
// What the LayerKernels conformance suite's tests share: tolerances, the comparison with
// kernels-ref, one block's and one model step's runs, and the fixture every test is written on
// (one instance per plugin and setting that PTDP_CONFORMANCE_KERNELS names).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels_under_test.hpp"
#include "ptdp/layer_kernels.hpp"
#include "support/gpt_fixtures.hpp"
#include "support/small_gpt_spec.hpp"

namespace ptdp::conformance {

using test::TensorMap;
using test::TokenBatch;
using test::small_gpt_spec;

struct Tolerances {
  double block_output, block_grad, loss, model_activation, model_grad, repeat;
};
Tolerances tolerances_for(DType activations);

// ||got - want|| / ||want|| within `tolerance`, or a failure that names the worst element.
::testing::AssertionResult close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                                 double tolerance);
void expect_close(const TensorMap& got, const TensorMap& want, double tolerance, const std::string& what);

// How a model's activations are kept across the tensor group: sequence parallelism
// (KernelsBinding::sequence_parallel) and the modules selective recomputation recomputes.
struct ActivationMemory {
  bool sequence_parallel = false;
  uint32_t recompute_modules = 0;
};

// `working`: KernelsBinding::working, the type precision.params names (F16 for "fp16").
KernelsBinding binding(const ModelSpec& m, Communicator* tp, int rank, int size, DType working = DType::F32,
                       ActivationMemory memory = {});
MicroBatch microbatch(const ModelSpec& m, int slot);
std::vector<float> random_activation(const ModelSpec& m, uint64_t seed);
void load(LayerKernels& k, const std::vector<ParamRef>& params, const TensorMap& global);
TensorMap whole_grads(LayerKernels& k, const std::vector<ParamRef>& params);

// One block's forward and backward on one rank; with `split_backward` the backward runs as
// backward_input, then backward_weight (then a second backward_weight, which must find nothing).
struct BlockRun {
  std::vector<float> out, din;
  TensorMap grads;
  TensorMap grads_before_weight;        // split: the gradients between the two parts
  bool weight_inputs_released = false;  // split: the second backward_weight was refused
};
BlockRun run_block(const KernelsUnderTest& under_test, const ModelSpec& m, const TensorMap& weights,
                   const std::vector<float>& x, const std::vector<float>& dout, DType working = DType::F32,
                   bool split_backward = false);
TensorMap block_weights(const ModelSpec& m, uint64_t seed);

enum class Order { Sequential, AllForwardThenReverse };

// One step of `microbatches` microbatches over `tp` ranks (threads of this process).
struct ModelRun {
  std::vector<float> losses;  // per microbatch
  TensorMap grads;            // the ranks' parts assembled into global tensors
};
// With `stale_gradients` the blocks' gradients start as NaN, not zero, and the step's first
// backward says so (MicroBatch::first_gradient), as the core runs kernels of ABI 1.6 and later.
// Under sequence parallelism the gradients of the parameters every rank holds whole are summed
// over the ranks after the step, as the core does. With `split_backward` the blocks run
// backward_input in the backward's place and every microbatch's backward_weight after the last
// backward, in the same order (the first carrying first_gradient), so that several slots' weight
// gradients wait at once.
ModelRun run_model(const KernelsUnderTest& under_test, const ModelSpec& m, int tp, int microbatches,
                   Order order = Order::Sequential, bool recompute = false, bool stale_gradients = false,
                   DType working = DType::F32, ActivationMemory memory = {}, bool split_backward = false);
void expect_padding_has_no_gradient(const TensorMap& grads, const ModelSpec& m);
// Runs `body` and expects a ptdp::Error whose message holds `needle`.
void expect_error(const std::function<void()>& body, const std::string& needle, const std::string& what);

class KernelsConformance : public ::testing::TestWithParam<KernelsUnderTest> {
 protected:
  // A CUDA plugin on a machine without a GPU is skipped, saying so: a CUDA build's suite lists it
  // wherever it is built and checks it where it can run.
  void SetUp() override {
    auto k = under_test().create();
    if (k->device().kind == MemoryKind::Cuda && k->device_count() == 0)
      GTEST_SKIP() << under_test().name << " computes on a GPU and this machine has none";
  }
  const KernelsUnderTest& under_test() const { return GetParam(); }
  Tolerances tolerances() const {
    auto k = under_test().create();
    return tolerances_for(k->activation_dtype());
  }
  // The whole model under test on `tp_size` ranks against kernels-ref on one, with dropout and
  // without (where a backend may take other paths: no masks to redraw).
  void expect_model_matches_the_reference(int tp_size) const {
    for (const ModelSpec& m : with_and_without_dropout()) {
      SCOPED_TRACE("dropout " + std::to_string(m.dropout));
      const ModelRun want = run_model(reference_kernels(), m, 1, 1);
      const ModelRun got = run_model(under_test(), m, tp_size, 1);
      const Tolerances tol = tolerances();
      EXPECT_TRUE(close("loss", got.losses, want.losses, tol.loss));
      expect_close(got.grads, want.grads, tol.model_grad, "gradient");
      expect_padding_has_no_gradient(got.grads, m);
    }
  }
  static std::vector<ModelSpec> with_and_without_dropout() {
    ModelSpec without = small_gpt_spec();
    without.dropout = 0.0f;
    return {small_gpt_spec(), without};
  }
};

}  // namespace ptdp::conformance
