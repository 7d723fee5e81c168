// The LayerKernels conformance suite, written once and run for every plugin (and setting of its
// options) that PTDP_CONFORMANCE_KERNELS names: each layer's forward and backward against
// kernels-ref on the same weights, inputs and dropout masks, one and two tensor-parallel ranks,
// and the saved-activation lifetime that layer_kernels.hpp promises (slots, recomputation,
// buffers the caller reuses). docs/kernels-conformance.md says how to run it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "activation_values.hpp"
#include "kernels_under_test.hpp"
#include "staging_communicator.hpp"
#include "support/gpt_fixtures.hpp"
#include "support/gpt_stack.hpp"
#include "support/shard.hpp"
#include "support/small_gpt_spec.hpp"
#include "support/thread_group.hpp"

namespace ptdp::conformance {
namespace {

using test::TensorMap;
using test::TokenBatch;
using test::small_gpt_spec;

// How far a backend may be from kernels-ref (relative error, ||got - ref|| / ||ref||), by the
// dtype of its activations. bf16: emulating bf16 storage points in fp64 PyTorch on these shapes
// (12 draws) gave at most 4e-3 for a block's output and input gradient, 7e-3 for its parameter
// gradients, 3e-4 for the model's loss and 1.9e-2 for its parameter gradients (the first layer's
// bias and LayerNorm gradients: sums over tokens that mostly cancel). fp32: rounding only.
// `repeat` is the distance between two runs of the same backend on the same input (cuDNN's
// attention backward sums with atomics, so bf16 backends need not repeat bit for bit).
struct Tolerances {
  double block_output, block_grad, loss, model_activation, model_grad, repeat;
};

Tolerances tolerances_for(DType activations) {
  if (activations == DType::BF16) return {1e-2, 1.5e-2, 2e-3, 2e-2, 3e-2, 1e-3};
  return {1e-5, 1e-5, 1e-6, 1e-5, 1e-5, 0.0};
}

// ||got - want|| / ||want|| with the worst element, for failure messages that say where.
::testing::AssertionResult close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
                                 double tolerance) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, the reference has " << want.size();
  double diff = 0, norm = 0, worst = -1;
  size_t worst_at = 0, non_finite = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) ++non_finite;
    const double d = double(got[i]) - double(want[i]);
    diff += d * d;
    norm += double(want[i]) * want[i];
    if (std::abs(d) > worst) worst = std::abs(d), worst_at = i;
  }
  if (non_finite)
    return ::testing::AssertionFailure() << what << ": " << non_finite << " of " << got.size()
                                         << " values are NaN or infinite";
  const double error = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  if (error <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": relative error " << error << " > tolerance " << tolerance << " over "
                                       << got.size() << " values; worst at " << worst_at << ": " << got[worst_at]
                                       << " vs reference " << want[worst_at];
}

void expect_close(const TensorMap& got, const TensorMap& want, double tolerance, const std::string& what) {
  for (const auto& [name, w] : want) {
    auto g = got.find(name);
    if (g == got.end()) {
      ADD_FAILURE() << what << " " << name << ": the plugin under test has no such parameter";
      continue;
    }
    EXPECT_EQ(g->second.shape, w.shape) << what << " " << name;
    EXPECT_TRUE(close(what + " " + name, g->second.values, w.values, tolerance));
  }
  for (const auto& [name, g] : got)
    if (!want.count(name)) ADD_FAILURE() << what << " " << name << ": kernels-ref has no such parameter";
}

KernelsBinding binding(const ModelSpec& m, Communicator* tp, int rank, int size) {
  KernelsBinding b;
  b.model = m;
  b.tp = tp;
  b.tp_rank = rank;
  b.tp_size = size;
  return b;
}

MicroBatch microbatch(const ModelSpec& m, int slot) {
  MicroBatch mb;
  mb.slot = slot;
  mb.step = 3;
  mb.first_sample = int64_t(slot) * m.micro_batch;
  return mb;
}

std::vector<float> random_activation(const ModelSpec& m, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(size_t(m.seq_len) * m.micro_batch * m.hidden);
  for (float& x : v) x = round_to_bf16(uniform(engine));  // exact in every activation dtype here
  return v;
}

void load(LayerKernels& k, const std::vector<ParamRef>& params, const TensorMap& global) {
  for (const ParamRef& p : params) {
    const std::vector<float> local = test::slice_global(test::shard_layout(p), global.at(p.name).values);
    k.copy_from_host(p.master, local.data());
  }
  k.params_updated();
}

TensorMap whole_grads(LayerKernels& k, const std::vector<ParamRef>& params) {
  std::vector<test::LocalTensor> local;
  for (const ParamRef& p : params) {
    test::LocalTensor t{test::shard_layout(p), std::vector<float>(size_t(p.grad.numel()))};
    k.copy_to_host(t.values.data(), p.grad);
    local.push_back(std::move(t));
  }
  return test::assemble({local});
}

// One block's forward and backward on one rank.
struct BlockRun {
  std::vector<float> out, din;
  TensorMap grads;
};

BlockRun run_block(const KernelsUnderTest& under_test, const ModelSpec& m, const TensorMap& weights,
                   const std::vector<float>& x, const std::vector<float>& dout) {
  auto k = under_test.create();
  k->bind(binding(m, nullptr, 0, 1));
  auto block = k->make_block(1);
  load(*k, block->parameters(), weights);
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor in = k->allocate(shape, k->activation_dtype()), out = k->allocate(shape, k->activation_dtype());
  write_values(*k, in.view, x);
  const MicroBatch mb = microbatch(m, 0);
  block->forward(mb, in.view, out.view, true);
  BlockRun run;
  run.out = read_values(*k, out.view);
  write_values(*k, out.view, dout);
  block->backward(mb, out.view, in.view);
  run.din = read_values(*k, in.view);
  run.grads = whole_grads(*k, block->parameters());
  return run;
}

TensorMap block_weights(const ModelSpec& m, uint64_t seed) {
  auto k = reference_kernels().create();
  k->bind(binding(m, nullptr, 0, 1));
  return test::make_initial_weights(k->make_block(1)->parameters(), seed);
}

enum class Order { Sequential, AllForwardThenReverse };

// One step of `microbatches` microbatches over `tp` ranks (threads of this process).
struct ModelRun {
  std::vector<float> losses;  // per microbatch
  TensorMap grads;            // the ranks' parts assembled into global tensors
};

// With `stale_gradients` the blocks' gradients start as NaN, not zero, and the step's first
// backward says so (MicroBatch::first_gradient), as the core runs kernels of ABI 1.6 and later.
ModelRun run_model(const KernelsUnderTest& under_test, const ModelSpec& m, int tp, int microbatches,
                   Order order = Order::Sequential, bool recompute = false, bool stale_gradients = false) {
  std::vector<TokenBatch> batches;
  for (int i = 0; i < microbatches; ++i) batches.push_back(test::make_token_batch(m, 21, i));
  test::ThreadGroup group(tp, "tp");
  std::vector<std::vector<test::LocalTensor>> grads(static_cast<size_t>(tp));
  std::vector<std::vector<float>> losses(static_cast<size_t>(tp), std::vector<float>(static_cast<size_t>(microbatches)));
  test::run_ranks(group, [&](int rank) {
    StagingCommunicator comm(group, rank);
    auto k = under_test.create();
    comm.set_kernels(k.get());
    k->bind(binding(m, &comm, rank, tp));
    test::GptStack stack(*k, m);
    stack.load(test::make_initial_weights(stack.parameters(), 5));
    if (stale_gradients) stack.stale_block_grads(std::nanf(""));
    else stack.zero_grads();
    const float scale = 1.0f / float(microbatches);
    auto& loss = losses[size_t(rank)];
    bool first_backward = true;
    auto backward = [&](int i) {
      MicroBatch mb = microbatch(m, i);
      mb.first_gradient = stale_gradients && first_backward;
      first_backward = false;
      stack.backward(mb, scale);
    };
    if (order == Order::Sequential) {
      for (int i = 0; i < microbatches; ++i) {
        loss[size_t(i)] = stack.forward(microbatch(m, i), batches[size_t(i)], recompute);
        backward(i);
      }
    } else {
      for (int i = 0; i < microbatches; ++i)
        loss[size_t(i)] = stack.forward(microbatch(m, i), batches[size_t(i)], recompute);
      for (int i = microbatches - 1; i >= 0; --i) backward(i);
    }
    grads[size_t(rank)] = stack.grads();
  });
  for (int r = 1; r < tp; ++r) EXPECT_EQ(losses[size_t(r)], losses[0]) << "rank " << r << " and rank 0 differ";
  return ModelRun{losses[0], test::assemble(grads)};
}

void expect_padding_has_no_gradient(const TensorMap& grads, const ModelSpec& m) {
  const test::HostTensor& word = grads.at("embedding.word");
  for (int64_t row = m.vocab; row < m.padded_vocab; ++row)
    for (int64_t f = 0; f < m.hidden; ++f)
      ASSERT_EQ(word.values[size_t(row * m.hidden + f)], 0.0f) << "padded row " << row << " of embedding.word";
}

// Runs `body` and expects a ptdp::Error whose message holds `needle`.
void expect_error(const std::function<void()>& body, const std::string& needle, const std::string& what) {
  try {
    body();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

class KernelsConformance : public ::testing::TestWithParam<KernelsUnderTest> {
 protected:
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

TEST_P(KernelsConformance, ParametersAreDescribedLikeTheReference) {
  const ModelSpec m = small_gpt_spec();
  for (int rank = 0; rank < 2; ++rank) {
    test::ThreadGroup group(2, "tp");
    StagingCommunicator mine_comm(group, rank), ref_comm(group, rank);
    auto mine = under_test().create(), ref = reference_kernels().create();
    mine_comm.set_kernels(mine.get());
    ref_comm.set_kernels(ref.get());
    mine->bind(binding(m, &mine_comm, rank, 2));
    ref->bind(binding(m, &ref_comm, rank, 2));
    test::GptStack got(*mine, m), want(*ref, m);
    ASSERT_EQ(got.parameters().size(), want.parameters().size()) << "rank " << rank;
    for (size_t i = 0; i < want.parameters().size(); ++i) {
      const ParamRef &g = got.parameters()[i], &w = want.parameters()[i];
      EXPECT_EQ(g.name, w.name) << "parameter " << i;
      EXPECT_EQ(g.global_shape, w.global_shape) << w.name;
      EXPECT_EQ(g.shard_dim, w.shard_dim) << w.name;
      EXPECT_EQ(g.shard_offset, w.shard_offset) << w.name << " on rank " << rank;
      EXPECT_EQ(g.master.shape, w.master.shape) << w.name << " on rank " << rank;
      EXPECT_EQ(g.weight_decay, w.weight_decay) << w.name;
      EXPECT_EQ(g.grad.dtype, DType::F32) << w.name;
    }
  }
}

// The side stream (the data-parallel reduction's, layer_kernels.hpp): none on the host, where
// calls complete before they return; on a device a stream of its own; the two orderings may come
// in any order and number and move no data. (That a reduction on it sees final gradients and the
// step after it sees the sums is what the layouts with d > 1 show on the device: their losses
// equal one rank's.)
TEST_P(KernelsConformance, SideStreamIsItsOwnAndOrderedBothWays) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  if (k->device().kind == MemoryKind::Host) {
    EXPECT_EQ(k->side_stream(), nullptr);
  } else {
    EXPECT_NE(k->side_stream(), nullptr);
    EXPECT_NE(k->side_stream(), k->stream());
  }
  // The orderings alone, any number of times, change nothing.
  OwnedTensor t = k->allocate({1 << 16}, DType::F32);
  std::vector<float> ones(1 << 16, 1.0f), back(1 << 16, 0.0f);
  k->copy_from_host(t.view, ones.data());
  for (int i = 0; i < 3; ++i) {
    k->side_waits_for_compute();
    k->compute_waits_for_side();
  }
  k->compute_waits_for_side();
  k->synchronize();
  k->copy_to_host(back.data(), t.view);
  EXPECT_EQ(back, ones);
}

// The trainer hands Adam the global sum of squares on the device instead of a scale it read back:
// the kernels clip from it as grad_clip_scale does, and update nothing when the norm is not finite.
TEST_P(KernelsConformance, AdamReadsTheGradientNormWhereItWasSummed) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  constexpr int64_t n = 1000;
  std::vector<float> master(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    master[size_t(i)] = 0.01f * float(i % 13) - 0.05f;
    grad[size_t(i)] = 0.02f * float(i % 7) - 0.06f;
  }
  struct Param {
    std::vector<OwnedTensor> memory;
    ParamRef ref;
  };
  auto make = [&] {
    Param p;
    for (int i = 0; i < 4; ++i) p.memory.push_back(k->allocate({n}, DType::F32));
    p.ref.name = "adam.test";
    p.ref.global_shape = {n};
    p.ref.master = p.memory[0].view;
    p.ref.grad = p.memory[1].view;
    p.ref.exp_avg = p.memory[2].view;
    p.ref.exp_avg_sq = p.memory[3].view;
    k->copy_from_host(p.ref.master, master.data());
    k->copy_from_host(p.ref.grad, grad.data());
    return p;
  };
  AdamStep step;
  step.lr = 1e-2f;
  step.weight_decay = 0.1f;
  const float max_norm = 0.5f;
  // On the host: the norm read back, the scale computed here.
  Param host = make();
  const float sum = static_cast<float>(k->sum_squares({host.ref.grad}));
  ASSERT_GT(std::sqrt(double(sum)), max_norm) << "the test means to clip";
  AdamStep scaled = step;
  scaled.grad_scale = grad_clip_scale(std::sqrt(double(sum)), max_norm);
  k->adam_step({host.ref}, scaled);
  // On the device: the sum written where Adam reads it.
  Param device = make();
  OwnedTensor sum_squares = k->allocate({1}, DType::F32);
  k->sum_squares_into({device.ref.grad}, sum_squares.view);
  float written = 0;
  k->copy_to_host(&written, sum_squares.view);
  EXPECT_EQ(written, sum);
  AdamStep from_device = step;
  from_device.grad_scale = 123.0f;  // ignored
  from_device.grad_sum_squares = sum_squares.view;
  from_device.max_grad_norm = max_norm;
  k->adam_step({device.ref}, from_device);
  for (const size_t t : {0, 2, 3}) {  // master and both moments
    std::vector<float> want(n), got(n);
    k->copy_to_host(want.data(), host.memory[t].view);
    k->copy_to_host(got.data(), device.memory[t].view);
    EXPECT_TRUE(close("adam tensor " + std::to_string(t), got, want, 1e-6));
  }
  // A non-finite gradient: nothing moves.
  Param broken = make();
  const float nan = std::nanf("");
  k->copy_from_host(broken.ref.grad.flat_slice(7, 1), &nan);
  k->sum_squares_into({broken.ref.grad}, sum_squares.view);
  from_device.grad_sum_squares = sum_squares.view;
  k->adam_step({broken.ref}, from_device);
  std::vector<float> after(n), moment(n);
  k->copy_to_host(after.data(), broken.ref.master);
  k->copy_to_host(moment.data(), broken.ref.exp_avg);
  EXPECT_EQ(after, master) << "a non-finite norm updated the weights";
  EXPECT_EQ(moment, std::vector<float>(n, 0.0f)) << "a non-finite norm updated the moments";
}

// Under precision.params = "fp16" the gradients and their sum of squares carry the loss scale
// (AdamStep::loss_scale): the kernels divide it out before clipping and the update, so a step on
// gradients scaled by a power of two equals the step on the unscaled ones, clipping included.
TEST_P(KernelsConformance, AdamDividesTheLossScaleOutOfTheGradients) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  constexpr int64_t n = 1000;
  constexpr float loss_scale = 4096.0f;
  std::vector<float> master(n), grad(n), scaled(n);
  for (int64_t i = 0; i < n; ++i) {
    master[size_t(i)] = 0.01f * float(i % 11) - 0.05f;
    grad[size_t(i)] = 0.03f * float(i % 5) - 0.06f;
    scaled[size_t(i)] = grad[size_t(i)] * loss_scale;
  }
  struct Param {
    std::vector<OwnedTensor> memory;
    ParamRef ref;
  };
  auto make = [&](const std::vector<float>& g) {
    Param p;
    for (int i = 0; i < 4; ++i) p.memory.push_back(k->allocate({n}, DType::F32));
    p.ref.name = "adam.test";
    p.ref.global_shape = {n};
    p.ref.master = p.memory[0].view;
    p.ref.grad = p.memory[1].view;
    p.ref.exp_avg = p.memory[2].view;
    p.ref.exp_avg_sq = p.memory[3].view;
    k->copy_from_host(p.ref.master, master.data());
    k->copy_from_host(p.ref.grad, g.data());
    return p;
  };
  for (const float max_norm : {0.0f, 0.5f}) {  // without clipping, and clipping
    AdamStep step;
    step.lr = 1e-2f;
    step.weight_decay = 0.1f;
    step.max_grad_norm = max_norm;
    Param plain = make(grad), carrying = make(scaled);
    OwnedTensor plain_sum = k->allocate({1}, DType::F32), scaled_sum = k->allocate({1}, DType::F32);
    k->sum_squares_into({plain.ref.grad}, plain_sum.view);
    k->sum_squares_into({carrying.ref.grad}, scaled_sum.view);
    if (max_norm > 0) {
      ASSERT_GT(std::sqrt(k->sum_squares({plain.ref.grad})), max_norm) << "the test means to clip";
    }
    AdamStep unscaled = step;
    unscaled.grad_sum_squares = plain_sum.view;
    k->adam_step({plain.ref}, unscaled);
    AdamStep with_scale = step;
    with_scale.grad_sum_squares = scaled_sum.view;
    with_scale.loss_scale = loss_scale;
    k->adam_step({carrying.ref}, with_scale);
    for (const size_t t : {0, 2, 3}) {  // master and both moments
      std::vector<float> want(n), got(n);
      k->copy_to_host(want.data(), plain.memory[t].view);
      k->copy_to_host(got.data(), carrying.memory[t].view);
      EXPECT_TRUE(close("adam tensor " + std::to_string(t) + " clipping at " + std::to_string(max_norm), got, want,
                        1e-6));
    }
    // Without the sum: grad_scale applies to the unscaled gradients.
    Param host_plain = make(grad), host_scaled = make(scaled);
    AdamStep given = step;
    given.grad_scale = 0.25f;
    k->adam_step({host_plain.ref}, given);
    given.loss_scale = loss_scale;
    k->adam_step({host_scaled.ref}, given);
    std::vector<float> want(n), got(n);
    k->copy_to_host(want.data(), host_plain.ref.master);
    k->copy_to_host(got.data(), host_scaled.ref.master);
    EXPECT_TRUE(close("adam master with a given grad_scale", got, want, 1e-6));
  }
  // The scaled gradients overflowed: nothing moves.
  std::vector<float> overflowed = scaled;
  overflowed[17] = std::numeric_limits<float>::infinity();
  Param broken = make(overflowed);
  OwnedTensor sum = k->allocate({1}, DType::F32);
  k->sum_squares_into({broken.ref.grad}, sum.view);
  AdamStep step;
  step.lr = 1e-2f;
  step.grad_sum_squares = sum.view;
  step.loss_scale = loss_scale;
  k->adam_step({broken.ref}, step);
  std::vector<float> after(n);
  k->copy_to_host(after.data(), broken.ref.master);
  EXPECT_EQ(after, master) << "an overflowed gradient updated the weights";
}

// The distributed optimizer keeps no whole master: the core places every parameter with an empty
// one and hands the backend its weights through set_weights. A step from weights set that way
// equals a step from the same weights loaded into placed masters.
TEST_P(KernelsConformance, AModelPlacedWithoutMastersTakesItsWeightsFromSetWeights) {
  const ModelSpec m = small_gpt_spec();
  const TokenBatch batch = test::make_token_batch(m, 21, 0);
  struct Step {
    float loss;
    TensorMap grads;
  };
  auto step = [&](bool whole_master) {
    auto k = under_test().create();
    k->bind(binding(m, nullptr, 0, 1));
    test::GptStack stack(*k, m);
    const TensorMap weights = test::make_initial_weights(stack.parameters(), 5);
    // The core's memory: a master (or none) and a gradient per parameter.
    std::vector<OwnedTensor> memory;
    std::vector<ParamRef> placed = stack.parameters();
    for (ParamRef& p : placed) {
      memory.push_back(k->allocate(p.master.shape, DType::F32));
      p.grad = memory.back().view;
      if (whole_master) {
        memory.push_back(k->allocate(p.master.shape, DType::F32));
        p.master = memory.back().view;
      } else {
        p.master.data = nullptr;
      }
    }
    k->place_parameters(placed);
    if (whole_master) {
      load(*k, placed, weights);
    } else {
      std::vector<OwnedTensor> values;
      std::vector<ParamRef> given = placed;
      for (ParamRef& p : given) {
        values.push_back(k->allocate(p.master.shape, DType::F32));
        p.master = values.back().view;
        const std::vector<float> local = test::slice_global(test::shard_layout(p), weights.at(p.name).values);
        k->copy_from_host(p.master, local.data());
      }
      k->set_weights(given);
      values.clear();
      k->release_cached_memory();  // the scratch goes back; the weights stay
    }
    const float loss = stack.forward(microbatch(m, 0), batch);
    stack.backward(microbatch(m, 0), 1.0f);
    return Step{loss, whole_grads(*k, placed)};
  };
  const Step loaded = step(true), set = step(false);
  const Tolerances tol = tolerances();
  EXPECT_TRUE(close("loss", {set.loss}, {loaded.loss}, tol.repeat));
  expect_close(set.grads, loaded.grads, tol.repeat, "gradient");
}

TEST_P(KernelsConformance, SetWeightsRefusesWhatItCannotSet) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  auto block = k->make_block(1);
  std::vector<OwnedTensor> memory;
  std::vector<ParamRef> placed = block->parameters();
  for (size_t i = 0; i < placed.size(); ++i) {
    memory.push_back(k->allocate(placed[i].master.shape, DType::F32));
    placed[i].grad = memory.back().view;
    memory.push_back(k->allocate(placed[i].master.shape, DType::F32));
    if (i == 0) placed[i].master = memory.back().view;  // the core keeps this one's master
    else placed[i].master.data = nullptr;
  }
  k->place_parameters(placed);
  std::vector<ParamRef> given = placed;
  for (size_t i = 0; i < given.size(); ++i) given[i].master = memory[2 * i + 1].view;
  expect_error([&] { k->set_weights({given[0]}); }, "was not placed with an empty master", "a placed master");
  ParamRef unknown = given[1];
  unknown.name = "layers.99.mlp.fc2.bias";
  expect_error([&] { k->set_weights({unknown}); }, "no parameter named 'layers.99.mlp.fc2.bias'", "an unknown name");
  ParamRef narrow = given[1];
  narrow.master.shape = {1};
  expect_error([&] { k->set_weights({narrow}); }, given[1].name, "another shape");
  k->set_weights({given.begin() + 1, given.end()});  // the rest is fine
}

TEST_P(KernelsConformance, BlockMatchesTheReference) {
  for (const ModelSpec& m : with_and_without_dropout()) {
    SCOPED_TRACE("dropout " + std::to_string(m.dropout));
    const TensorMap weights = block_weights(m, 3);
    const std::vector<float> x = random_activation(m, 1), dout = random_activation(m, 2);
    const BlockRun want = run_block(reference_kernels(), m, weights, x, dout);
    const BlockRun got = run_block(under_test(), m, weights, x, dout);
    const Tolerances tol = tolerances();
    EXPECT_TRUE(close("block output", got.out, want.out, tol.block_output));
    EXPECT_TRUE(close("block input gradient", got.din, want.din, tol.block_output));
    expect_close(got.grads, want.grads, tol.block_grad, "block gradient");
  }
}

// The embedding and the head on their own, so that a difference is pinned to a layer: the
// embedding's output and gradients for given tokens and output gradient, the head's loss, input
// gradient and gradients for a given input.
struct EdgeRun {
  std::vector<float> embedded, loss, din;
  TensorMap grads;
};

EdgeRun run_edges(const KernelsUnderTest& under_test, const ModelSpec& m, const std::vector<float>& head_in,
                  const std::vector<float>& dout) {
  auto k = under_test.create();
  k->bind(binding(m, nullptr, 0, 1));
  auto embedding = k->make_embedding();
  auto head = k->make_head(embedding.get());
  std::vector<ParamRef> params = embedding->parameters();
  for (const ParamRef& p : head->parameters()) params.push_back(p);
  load(*k, params, test::make_initial_weights(params, 9));
  TokenBatch batch = test::make_token_batch(m, 31, 0);
  auto ids = [&](std::vector<int32_t>& v) {
    return Tensor{v.data(), DType::I32, {m.seq_len, m.micro_batch}, Device{MemoryKind::Host, 0}};
  };
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor a = k->allocate(shape, k->activation_dtype()), loss = k->allocate({1}, DType::F32);
  const MicroBatch mb = microbatch(m, 0);
  EdgeRun run;
  embedding->forward(mb, ids(batch.tokens), a.view, true);
  run.embedded = read_values(*k, a.view);
  write_values(*k, a.view, head_in);
  head->forward(mb, a.view, ids(batch.targets), loss.view, true);
  run.loss = read_values(*k, loss.view);
  head->backward(mb, 0.5f, a.view);
  run.din = read_values(*k, a.view);
  write_values(*k, a.view, dout);
  embedding->backward(mb, a.view);
  run.grads = whole_grads(*k, params);
  return run;
}

TEST_P(KernelsConformance, EmbeddingAndHeadMatchTheReference) {
  const ModelSpec m = small_gpt_spec();
  const std::vector<float> head_in = random_activation(m, 11), dout = random_activation(m, 12);
  const EdgeRun want = run_edges(reference_kernels(), m, head_in, dout);
  const EdgeRun got = run_edges(under_test(), m, head_in, dout);
  const Tolerances tol = tolerances();
  EXPECT_TRUE(close("embedding output", got.embedded, want.embedded, tol.block_output));
  EXPECT_TRUE(close("head loss", got.loss, want.loss, tol.loss));
  // As the model's: the head's input gradient and embedding.word's gradient (the logits' and the
  // lookups' parts) are sums over the vocabulary and the tokens.
  EXPECT_TRUE(close("head input gradient", got.din, want.din, tol.model_activation));
  expect_close(got.grads, want.grads, tol.model_grad, "embedding and head gradient");
}

// HeadLayer::logits on given input over `tp` ranks: [tokens, vocab], each rank's vocabulary
// shard put in its place, the padded columns left out (their values are meaningless).
std::vector<float> run_logits(const KernelsUnderTest& under_test, const ModelSpec& m, int tp,
                              const std::vector<float>& head_in) {
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch, shard = m.padded_vocab / tp;
  std::vector<float> logits(size_t(tokens * m.vocab));
  test::ThreadGroup group(tp, "tp");
  test::run_ranks(group, [&](int rank) {
    StagingCommunicator comm(group, rank);
    auto k = under_test.create();
    comm.set_kernels(k.get());
    k->bind(binding(m, &comm, rank, tp));
    auto embedding = k->make_embedding();
    auto head = k->make_head(embedding.get());
    std::vector<ParamRef> params = embedding->parameters();
    for (const ParamRef& p : head->parameters()) params.push_back(p);
    load(*k, params, test::make_initial_weights(params, 9));
    OwnedTensor in = k->allocate({m.seq_len, m.micro_batch, m.hidden}, k->activation_dtype());
    OwnedTensor out = k->allocate({m.seq_len, m.micro_batch, shard}, DType::F32);
    write_values(*k, in.view, head_in);
    MicroBatch mb = microbatch(m, 0);
    mb.training = false;
    head->logits(mb, in.view, out.view);
    const std::vector<float> mine = read_values(*k, out.view);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < shard; ++c)
        if (rank * shard + c < m.vocab) logits[size_t(t * m.vocab + rank * shard + c)] = mine[size_t(t * shard + c)];
  });
  return logits;
}

TEST_P(KernelsConformance, LogitsMatchTheReferenceOnEveryVocabularyShard) {
  const ModelSpec m = small_gpt_spec();
  const std::vector<float> head_in = random_activation(m, 13);
  const std::vector<float> want = run_logits(reference_kernels(), m, 1, head_in);
  const Tolerances tol = tolerances();
  EXPECT_TRUE(close("logits on one rank", run_logits(under_test(), m, 1, head_in), want, tol.model_activation));
  EXPECT_TRUE(close("logits over two ranks", run_logits(under_test(), m, 2, head_in), want, tol.model_activation));
}

TEST_P(KernelsConformance, ModelMatchesTheReference) { expect_model_matches_the_reference(1); }

TEST_P(KernelsConformance, TwoTensorParallelRanksMatchTheReference) { expect_model_matches_the_reference(2); }

// forward(save=false) keeps nothing and computes what forward(save=true) does; a saved forward's
// input may be overwritten before its backward; in and out (dout and din) may be one buffer.
TEST_P(KernelsConformance, BlockKeepsWhatBackwardNeedsAndNothingElse) {
  const ModelSpec m = small_gpt_spec();
  const TensorMap weights = block_weights(m, 4);
  const std::vector<float> x = random_activation(m, 5), dout = random_activation(m, 6);
  const BlockRun plain = run_block(under_test(), m, weights, x, dout);
  const double repeat = tolerances().repeat;

  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  auto block = k->make_block(1);
  load(*k, block->parameters(), weights);
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor a = k->allocate(shape, k->activation_dtype()), b = k->allocate(shape, k->activation_dtype());
  const MicroBatch mb = microbatch(m, 0);

  write_values(*k, a.view, x);
  block->forward(mb, a.view, b.view, false);
  EXPECT_TRUE(close("output of forward(save=false)", read_values(*k, b.view), plain.out, repeat));
  expect_error([&] { block->backward(mb, b.view, a.view); }, "without a forward", "backward after forward(save=false)");

  block->forward(mb, a.view, a.view, true);  // in == out
  EXPECT_TRUE(close("output of forward with in == out", read_values(*k, a.view), plain.out, repeat));
  write_values(*k, a.view, dout);  // overwrites the forward's input as well
  block->backward(mb, a.view, a.view);  // dout == din
  EXPECT_TRUE(close("input gradient of backward with dout == din, its input overwritten", read_values(*k, a.view),
                    plain.din, repeat));
  EXPECT_TRUE(close("the gradients of one backward", whole_grads(*k, block->parameters()).at("layers.1.mlp.fc1.weight").values,
                    plain.grads.at("layers.1.mlp.fc1.weight").values, repeat));
}

TEST_P(KernelsConformance, SlotMisuseIsReportedByEveryLayer) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  auto embedding = k->make_embedding();
  auto block = k->make_block(0);
  auto head = k->make_head(embedding.get());
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor a = k->allocate(shape, k->activation_dtype()), b = k->allocate(shape, k->activation_dtype());
  OwnedTensor loss = k->allocate({1}, DType::F32);
  TokenBatch batch = test::make_token_batch(m, 8, 0);
  auto ids = [&](std::vector<int32_t>& v) {
    return Tensor{v.data(), DType::I32, {m.seq_len, m.micro_batch}, Device{MemoryKind::Host, 0}};
  };
  const MicroBatch three = microbatch(m, 3), four = microbatch(m, 4);

  expect_error([&] { embedding->backward(three, a.view); }, "without a forward", "embedding backward, nothing saved");
  expect_error([&] { block->backward(three, a.view, b.view); }, "without a forward", "block backward, nothing saved");
  expect_error([&] { head->backward(three, 1.0f, b.view); }, "without a forward", "head backward, nothing saved");

  embedding->forward(three, ids(batch.tokens), a.view, true);
  block->forward(three, a.view, b.view, true);
  head->forward(three, b.view, ids(batch.targets), loss.view, true);
  expect_error([&] { embedding->forward(three, ids(batch.tokens), a.view, true); }, "already holds",
               "embedding forward into a full slot");
  expect_error([&] { block->forward(three, a.view, b.view, true); }, "already holds", "block forward into a full slot");
  expect_error([&] { head->forward(three, b.view, ids(batch.targets), loss.view, true); }, "already holds",
               "head forward into a full slot");

  // Another slot may be in flight beside it; a released slot is free again and has nothing saved.
  embedding->forward(four, ids(batch.tokens), a.view, true);
  block->forward(four, a.view, b.view, true);
  head->forward(four, b.view, ids(batch.targets), loss.view, true);
  embedding->release(3);
  block->release(3);
  head->release(3);
  expect_error([&] { head->backward(three, 1.0f, b.view); }, "without a forward", "head backward after release");
  expect_error([&] { block->backward(three, b.view, a.view); }, "without a forward", "block backward after release");
  expect_error([&] { embedding->backward(three, a.view); }, "without a forward", "embedding backward after release");
  head->backward(four, 1.0f, b.view);
  block->backward(four, b.view, a.view);
  embedding->backward(four, a.view);
  expect_error([&] { block->backward(four, b.view, a.view); }, "without a forward", "a second backward of one forward");
  block->forward(three, a.view, b.view, true);
  block->backward(three, b.view, a.view);
  k->synchronize();
}

TEST_P(KernelsConformance, MicrobatchesInFlightAndRecomputationMatchTheSequentialStep) {
  const ModelSpec m = small_gpt_spec();
  const Tolerances tol = tolerances();
  const ModelRun sequential = run_model(under_test(), m, 1, 3);
  const ModelRun in_flight = run_model(under_test(), m, 1, 3, Order::AllForwardThenReverse);
  const ModelRun recomputed = run_model(under_test(), m, 1, 3, Order::AllForwardThenReverse, true);
  EXPECT_TRUE(close("losses with every microbatch in flight", in_flight.losses, sequential.losses, tol.repeat));
  EXPECT_TRUE(close("losses with recomputation", recomputed.losses, sequential.losses, tol.repeat));
  // The microbatches' gradients are summed in another order.
  const double reordered = std::max(tol.repeat, 1e-5);
  expect_close(in_flight.grads, sequential.grads, reordered, "gradient with every microbatch in flight");
  expect_close(recomputed.grads, sequential.grads, reordered, "gradient with recomputation");
}

// The core no longer zeroes the blocks' gradients for kernels of ABI 1.6 and later: the step's
// first backward must write them, whatever they held, and the later ones add to them. On one and
// two tensor-parallel ranks, with dropout and without (where a backend may sum bias gradients in
// other kernels), and with every microbatch in flight (the first backward is the last slot's).
TEST_P(KernelsConformance, TheFirstBackwardWritesOverStaleBlockGradients) {
  const Tolerances tol = tolerances();
  const double reordered = std::max(tol.repeat, 1e-5);
  for (const ModelSpec& m : with_and_without_dropout()) {
    SCOPED_TRACE("dropout " + std::to_string(m.dropout));
    for (int tp : {1, 2}) {
      SCOPED_TRACE("tensor-parallel size " + std::to_string(tp));
      const ModelRun zeroed = run_model(under_test(), m, tp, 2);
      const ModelRun stale = run_model(under_test(), m, tp, 2, Order::Sequential, false, true);
      EXPECT_TRUE(close("losses", stale.losses, zeroed.losses, tol.repeat));
      expect_close(stale.grads, zeroed.grads, reordered, "gradient");
    }
  }
  const ModelSpec m = small_gpt_spec();
  const ModelRun zeroed = run_model(under_test(), m, 1, 3, Order::AllForwardThenReverse);
  const ModelRun stale = run_model(under_test(), m, 1, 3, Order::AllForwardThenReverse, false, true);
  expect_close(stale.grads, zeroed.grads, reordered, "gradient with every microbatch in flight");
}

INSTANTIATE_TEST_SUITE_P(Plugins, KernelsConformance, ::testing::ValuesIn(kernels_under_test()),
                         [](const ::testing::TestParamInfo<KernelsUnderTest>& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::conformance
