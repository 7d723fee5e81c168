// kernels-ref bound with the working type F16 (precision.params = "fp16"): what a GPU run would
// store in half comes out of every layer rounded to it, the same layers bound with F32 do not
// round, and a loss scale too large overflows the gradients to infinity, as fp16 would.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "fp16_format.hpp"
#include "ref_kernels.hpp"
#include "support/gpt_fixtures.hpp"

namespace ptdp::test {
namespace {

using kref::RefKernels;

ModelSpec tiny() {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 8;
  m.heads = 2;
  m.seq_len = 4;
  m.vocab = 10;
  m.padded_vocab = 10;
  m.ffn_hidden = 32;
  m.micro_batch = 2;
  m.dropout = 0.1f;
  m.seed = 42;
  return m;
}

KernelsBinding binding(DType working) {
  KernelsBinding b;
  b.model = tiny();
  b.working = working;
  return b;
}

void load(const std::vector<ParamRef>& params, uint64_t seed) {
  const TensorMap global = make_initial_weights(params, seed);
  for (const ParamRef& p : params) {
    const std::vector<float> local = slice_global(shard_layout(p), global.at(p.name).values);
    std::copy(local.begin(), local.end(), p.master.as<float>());
  }
}

// How many values of `t` half cannot hold (round_to_fp16 changes them); non-finite ones count.
int64_t not_half(const Tensor& t) {
  int64_t count = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = t.as<float>()[i];
    count += !std::isfinite(v) || kref::round_to_fp16(v) != v;
  }
  return count;
}

int64_t non_finite(const Tensor& t) {
  int64_t count = 0;
  for (int64_t i = 0; i < t.numel(); ++i) count += !std::isfinite(t.as<float>()[i]);
  return count;
}

// One microbatch through an embedding, a block and the head, forward and backward, with the
// head's backward given `loss_scale`; each layer's output and input gradient are handed to
// `check` by name.
void run_layers(DType working, float loss_scale, const std::function<void(const std::string&, const Tensor&)>& check) {
  const ModelSpec m = tiny();
  RefKernels k;
  k.bind(binding(working));
  auto emb = k.make_embedding();
  auto block = k.make_block(0);
  auto head = k.make_head(emb.get());
  load(emb->parameters(), 3);
  load(block->parameters(), 3);
  load(head->parameters(), 3);
  const TokenBatch batch = make_token_batch(m, 5, 0);
  std::vector<int32_t> tokens = batch.tokens, targets = batch.targets;
  const Tensor token_ids{tokens.data(), DType::I32, {m.seq_len, m.micro_batch}, {}};
  const Tensor target_ids{targets.data(), DType::I32, {m.seq_len, m.micro_batch}, {}};
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor x0 = k.allocate(shape, DType::F32), x1 = k.allocate(shape, DType::F32), loss = k.allocate({1}, DType::F32);
  OwnedTensor d1 = k.allocate(shape, DType::F32), d0 = k.allocate(shape, DType::F32);
  const MicroBatch mb{0, 1, 0};
  emb->forward(mb, token_ids, x0.view, true);
  check("embedding output", x0.view);
  block->forward(mb, x0.view, x1.view, true);
  check("block output", x1.view);
  head->forward(mb, x1.view, target_ids, loss.view, true);
  head->backward(mb, loss_scale, d1.view);
  check("head input gradient", d1.view);
  block->backward(mb, d1.view, d0.view);
  check("block input gradient", d0.view);
  emb->backward(mb, d0.view);
}

TEST(KernelsRefFp16, WhatAGpuStoresInHalfIsRoundedToIt) {
  // A loss scale as the core's: 2^16 over m·d.
  const float scale = 65536.0f / 4;
  run_layers(DType::F16, scale, [](const std::string& what, const Tensor& t) {
    EXPECT_EQ(not_half(t), 0) << what << " holds values half cannot";
  });
  int64_t unrounded = 0;
  run_layers(DType::F32, scale, [&](const std::string& what, const Tensor& t) {
    EXPECT_EQ(non_finite(t), 0) << what;
    unrounded += not_half(t);
  });
  EXPECT_GT(unrounded, 0) << "fp32 layers gave only values half holds: the test proves nothing";
}

TEST(KernelsRefFp16, ALossScaleTooLargeOverflowsTheGradients) {
  int64_t overflowed = 0;
  run_layers(DType::F16, std::ldexp(1.0f, 40), [&](const std::string& what, const Tensor& t) {
    if (what.find("gradient") != std::string::npos) overflowed += non_finite(t);
  });
  EXPECT_GT(overflowed, 0) << "2^40 times the loss overflowed nothing";
  // The same scale in fp32 stays finite: it is the half storage that overflows.
  run_layers(DType::F32, std::ldexp(1.0f, 40), [](const std::string& what, const Tensor& t) {
    EXPECT_EQ(non_finite(t), 0) << what;
  });
}

TEST(KernelsRefFp16, OnlyFp32AndFp16AreWorkingTypesItRuns) {
  RefKernels k;
  EXPECT_NE(k.precisions() & precision_bit(PrecisionSupport::Fp16), 0u);
  try {
    k.bind(binding(DType::BF16));
    FAIL() << "a bf16 working type was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernels-ref: the working type bf16 is not one this backend runs"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelsRefFp16, AdamRefusesALossScaleThatIsNotPositive) {
  RefKernels k;
  k.bind(binding(DType::F16));
  AdamStep step;
  step.loss_scale = 0.0f;
  try {
    k.adam_step({}, step);
    FAIL() << "a zero loss scale was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("adam_step loss_scale must be positive and finite (got 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ptdp::test
