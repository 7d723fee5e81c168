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
#include "conformance_support.hpp"
#include "kernels_under_test.hpp"
#include "staging_communicator.hpp"
#include "support/gpt_fixtures.hpp"
#include "support/gpt_stack.hpp"
#include "support/shard.hpp"
#include "support/small_gpt_spec.hpp"
#include "support/thread_group.hpp"

namespace ptdp::conformance {
namespace {


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

// The transfer stream (the pipeline's sends and receives posted ahead, ABI 1.10): the same as the
// side stream, and apart from both others. (That transfers on it land before the compute that
// reads them is what the pipeline layouts show on the device: their losses equal one rank's.)
TEST_P(KernelsConformance, TransferStreamIsItsOwnAndOrderedBothWays) {
  const ModelSpec m = small_gpt_spec();
  auto k = under_test().create();
  k->bind(binding(m, nullptr, 0, 1));
  if (k->device().kind == MemoryKind::Host) {
    EXPECT_EQ(k->transfer_stream(), nullptr);
  } else {
    EXPECT_NE(k->transfer_stream(), nullptr);
    EXPECT_NE(k->transfer_stream(), k->stream());
    EXPECT_NE(k->transfer_stream(), k->side_stream());
  }
  OwnedTensor t = k->allocate({1 << 16}, DType::F32);
  std::vector<float> ones(1 << 16, 1.0f), back(1 << 16, 0.0f);
  k->copy_from_host(t.view, ones.data());
  for (int i = 0; i < 3; ++i) {
    k->transfer_waits_for_compute();
    k->compute_waits_for_transfer();
  }
  k->compute_waits_for_transfer();
  k->synchronize();
  k->copy_to_host(back.data(), t.view);
  EXPECT_EQ(back, ones);
}

// Bound with core_places_parameters (what the core does), a backend need hold no Adam moments
// before placement: a model placed and stepped with the caller's moments trains exactly as one
// bound without it.
TEST_P(KernelsConformance, ParametersTheCorePlacesTrainAsThoseItDoesNot) {
  const ModelSpec m = small_gpt_spec();
  const TokenBatch batch = test::make_token_batch(m, 23, 0);
  auto train = [&](bool core_places) {
    auto k = under_test().create();
    KernelsBinding b = binding(m, nullptr, 0, 1);
    b.core_places_parameters = core_places;
    k->bind(b);
    test::GptStack stack(*k, m);
    std::vector<OwnedTensor> memory;
    std::vector<ParamRef> placed = stack.parameters();
    for (ParamRef& p : placed) {
      EXPECT_NE(p.master.data, nullptr) << p.name << ": a backend's ref has its master before placement";
      EXPECT_NE(p.grad.data, nullptr) << p.name << ": and its gradient";
      for (Tensor* t : {&p.master, &p.grad, &p.exp_avg, &p.exp_avg_sq}) {
        memory.push_back(k->allocate(p.master.shape, DType::F32));
        *t = memory.back().view;
        k->fill_zero(*t);
      }
    }
    k->place_parameters(placed);
    load(*k, placed, test::make_initial_weights(placed, 9));
    std::vector<float> losses;
    for (int s = 1; s <= 2; ++s) {
      losses.push_back(stack.forward(microbatch(m, 0), batch));
      stack.backward(microbatch(m, 0), 1.0f);
      AdamStep step;
      step.step = s;
      step.lr = 1e-2f;
      k->adam_step(placed, step);
      k->params_updated();
    }
    losses.push_back(stack.forward(microbatch(m, 0), batch));
    return losses;
  };
  const std::vector<float> placed_by_core = train(true), kept = train(false);
  EXPECT_TRUE(close("losses", placed_by_core, kept, tolerances().repeat));
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
