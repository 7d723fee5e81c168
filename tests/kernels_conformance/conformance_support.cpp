// The conformance suite's shared pieces (conformance_support.hpp).
#include "conformance_support.hpp"

#include <cmath>
#include <random>

#include "activation_values.hpp"
#include "staging_communicator.hpp"
#include "support/gpt_stack.hpp"
#include "support/shard.hpp"
#include "support/thread_group.hpp"

namespace ptdp::conformance {

// How far a backend may be from kernels-ref (relative error, ||got - ref|| / ||ref||), by the
// dtype of its activations. bf16: emulating bf16 storage points in fp64 PyTorch on these shapes
// (12 draws) gave at most 4e-3 for a block's output and input gradient, 7e-3 for its parameter
// gradients, 3e-4 for the model's loss and 1.9e-2 for its parameter gradients (the first layer's
// bias and LayerNorm gradients: sums over tokens that mostly cancel). fp32: rounding only.
// `repeat` is the distance between two runs of the same backend on the same input (cuDNN's
// attention backward sums with atomics, so bf16 backends need not repeat bit for bit).
Tolerances tolerances_for(DType activations) {
  if (activations == DType::BF16) return {1e-2, 1.5e-2, 2e-3, 2e-2, 3e-2, 1e-3};
  // fp16 keeps 3 more mantissa bits than bf16, so its rounding errors are 8 times smaller: a
  // quarter of bf16's bounds leaves twice that as margin.
  if (activations == DType::F16) return {2.5e-3, 4e-3, 5e-4, 5e-3, 7.5e-3, 1e-3};
  return {1e-5, 1e-5, 1e-6, 1e-5, 1e-5, 0.0};
}

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

KernelsBinding binding(const ModelSpec& m, Communicator* tp, int rank, int size, DType working,
                       ActivationMemory memory) {
  KernelsBinding b;
  b.working = working;
  b.sequence_parallel = memory.sequence_parallel;
  b.recompute_modules = memory.recompute_modules;
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

BlockRun run_block(const KernelsUnderTest& under_test, const ModelSpec& m, const TensorMap& weights,
                   const std::vector<float>& x, const std::vector<float>& dout, DType working, bool split_backward) {
  auto k = under_test.create();
  k->bind(binding(m, nullptr, 0, 1, working));
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
  if (split_backward) {
    block->backward_input(mb, out.view, in.view);
    run.din = read_values(*k, in.view);
    run.grads_before_weight = whole_grads(*k, block->parameters());
    block->backward_weight(mb);
  } else {
    block->backward(mb, out.view, in.view);
    run.din = read_values(*k, in.view);
  }
  run.grads = whole_grads(*k, block->parameters());
  if (split_backward) {  // what backward_weight read is gone: a second one has nothing to read
    try {
      block->backward_weight(mb);
      run.weight_inputs_released = false;
    } catch (const Error&) {
      run.weight_inputs_released = true;
    }
  }
  return run;
}

TensorMap block_weights(const ModelSpec& m, uint64_t seed) {
  auto k = reference_kernels().create();
  k->bind(binding(m, nullptr, 0, 1));
  return test::make_initial_weights(k->make_block(1)->parameters(), seed);
}

ModelRun run_model(const KernelsUnderTest& under_test, const ModelSpec& m, int tp, int microbatches,
                   Order order, bool recompute, bool stale_gradients, DType working, ActivationMemory memory,
                   bool split_backward) {
  std::vector<TokenBatch> batches;
  for (int i = 0; i < microbatches; ++i) batches.push_back(test::make_token_batch(m, 21, i));
  test::ThreadGroup group(tp, "tp");
  std::vector<std::vector<test::LocalTensor>> grads(static_cast<size_t>(tp));
  std::vector<std::vector<float>> losses(static_cast<size_t>(tp), std::vector<float>(static_cast<size_t>(microbatches)));
  test::run_ranks(group, [&](int rank) {
    StagingCommunicator comm(group, rank);
    auto k = under_test.create();
    comm.set_kernels(k.get());
    k->bind(binding(m, &comm, rank, tp, working, memory));
    test::GptStack stack(*k, m, memory.sequence_parallel ? m.seq_len / tp : m.seq_len);
    stack.load(test::make_initial_weights(stack.parameters(), 5));
    if (stale_gradients) stack.stale_block_grads(std::nanf(""));
    else stack.zero_grads();
    const float scale = 1.0f / float(microbatches);
    auto& loss = losses[size_t(rank)];
    bool first_backward = true;
    std::vector<MicroBatch> weights_pending;  // split: each backward's weight part, in order
    auto backward = [&](int i) {
      MicroBatch mb = microbatch(m, i);
      mb.first_gradient = stale_gradients && first_backward;
      first_backward = false;
      if (!split_backward) return stack.backward(mb, scale);
      MicroBatch input = mb;
      input.first_gradient = false;  // the weight part is what writes the block gradients
      stack.backward(input, scale, true);
      weights_pending.push_back(mb);
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
    for (const MicroBatch& mb : weights_pending) stack.backward_weight(mb);
    if (memory.sequence_parallel)
      for (const ParamRef& p : stack.parameters())
        if (p.shard_dim < 0) comm.all_reduce(p.grad, ReduceOp::Sum);
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

void expect_error(const std::function<void()>& body, const std::string& needle, const std::string& what) {
  try {
    body();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

}  // namespace ptdp::conformance
