// place_parameters: the backend's parameters move into buffers the core owns (values kept), the
// layers accumulate their gradients there, and Adam on a flat range of a parameter equals that
// range of Adam on the whole.
#include <gtest/gtest.h>

#include <numeric>

#include "ref_kernels.hpp"
#include "support/gpt_fixtures.hpp"

namespace ptdp::test {
namespace {

using kref::RefKernels;

ModelSpec tiny() {
  ModelSpec m;
  m.layers = 1;
  m.hidden = 8;
  m.heads = 2;
  m.seq_len = 4;
  m.vocab = 10;
  m.padded_vocab = 10;
  m.ffn_hidden = 32;
  m.micro_batch = 2;
  return m;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.as<float>(), t.as<float>() + t.numel()); }

// Two flat buffers holding every parameter back to back, and the list that places them there.
struct Buffers {
  OwnedTensor master, grad;
  std::vector<ParamRef> placed;
};

Buffers buffers_for(RefKernels& k, const std::vector<ParamRef>& params) {
  int64_t total = 0;
  for (const ParamRef& p : params) total += p.master.numel();
  Buffers b{k.allocate({total}, DType::F32), k.allocate({total}, DType::F32), params};
  int64_t at = 0;
  for (ParamRef& p : b.placed) {
    const int64_t n = p.master.numel();
    p.master = b.master.view.flat_slice(at, n);
    p.master.shape = p.grad.shape;
    p.grad = b.grad.view.flat_slice(at, n);
    p.grad.shape = p.master.shape;
    at += n;
  }
  return b;
}

TEST(KernelsRefPlacement, ParametersMoveIntoTheCoresBuffersAndGradientsAccumulateThere) {
  const ModelSpec m = tiny();
  RefKernels k;
  k.bind({m, 0, 1, nullptr, 0});
  auto block = k.make_block(0);
  const std::vector<ParamRef> before = block->parameters();
  for (const ParamRef& p : before) std::iota(p.master.as<float>(), p.master.as<float>() + p.master.numel(), 1.0f);
  Buffers b = buffers_for(k, before);
  k.place_parameters(b.placed);

  const std::vector<ParamRef> after = block->parameters();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].master.data, b.placed[i].master.data) << after[i].name;
    EXPECT_EQ(after[i].grad.data, b.placed[i].grad.data) << after[i].name;
    EXPECT_EQ(after[i].exp_avg.data, nullptr) << after[i].name << ": the moments are the core's once placed";
    std::vector<float> want(static_cast<size_t>(after[i].master.numel()));
    std::iota(want.begin(), want.end(), 1.0f);
    EXPECT_EQ(values(after[i].master), want) << after[i].name;
  }

  OwnedTensor x = k.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  OwnedTensor y = k.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  for (int64_t i = 0; i < x.view.numel(); ++i) x.view.as<float>()[i] = 0.01f * static_cast<float>(i % 7);
  const MicroBatch mb{0, 1, 0};
  block->forward(mb, x.view, y.view, true);
  block->backward(mb, y.view, x.view);
  EXPECT_GT(k.sum_squares({b.grad.view}), 0.0) << "the backward wrote no gradient into the core's buffer";
}

TEST(KernelsRefPlacement, AnUnknownParameterIsRefusedAndNothingMoves) {
  RefKernels k;
  k.bind({tiny(), 0, 1, nullptr, 0});
  auto block = k.make_block(0);
  Buffers b = buffers_for(k, block->parameters());
  b.placed.back().name = "layers.7.mlp.fc2.bias";
  try {
    k.place_parameters(b.placed);
    FAIL() << "an unknown name was placed";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "kernels-ref: place_parameters: no parameter named 'layers.7.mlp.fc2.bias'");
  }
  EXPECT_NE(block->parameters()[0].master.data, b.placed[0].master.data);
}

TEST(KernelsRefPlacement, AnEmptyMasterKeepsTheBackendsOwnAndAnotherShapeIsRefused) {
  RefKernels k;
  k.bind({tiny(), 0, 1, nullptr, 0});
  auto block = k.make_block(0);
  const std::vector<ParamRef> before = block->parameters();
  Buffers b = buffers_for(k, before);
  for (ParamRef& p : b.placed) p.master.data = nullptr;  // the core keeps no whole master
  b.placed[1].master.shape = {3};
  try {
    k.place_parameters(b.placed);
    FAIL() << "an empty master of another shape was placed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(b.placed[1].name + " placed with an empty master of shape [3]"), std::string::npos)
        << e.what();
  }
  b.placed[1].master.shape = before[1].master.shape;
  k.place_parameters(b.placed);
  const std::vector<ParamRef> after = block->parameters();
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].master.data, before[i].master.data) << after[i].name << ": its own master, kept";
    EXPECT_EQ(after[i].grad.data, b.placed[i].grad.data) << after[i].name;
  }
}

TEST(KernelsRefPlacement, AdamOnARangeOfAParameterIsThatRangeOfAdamOnTheWhole) {
  RefKernels k;
  k.bind({tiny(), 0, 1, nullptr, 0});
  auto whole = k.make_block(0), parts = k.make_block(0);
  const ParamRef w = whole->parameters()[2], p = parts->parameters()[2];  // attn.qkv.weight
  for (const ParamRef* r : {&w, &p}) {
    for (int64_t i = 0; i < r->master.numel(); ++i) {
      r->master.as<float>()[i] = 0.1f * static_cast<float>(i % 11) - 0.5f;
      r->grad.as<float>()[i] = 0.01f * static_cast<float>(i % 5) - 0.02f;
    }
  }
  AdamStep step;
  step.lr = 1e-2f;
  step.weight_decay = 0.1f;
  step.grad_scale = 0.5f;
  k.adam_step({w}, step);
  const int64_t n = p.master.numel(), cut = n / 3;
  std::vector<ParamRef> ranges;
  for (auto [offset, count] : {std::pair<int64_t, int64_t>{0, cut}, {cut, n - cut}}) {
    ParamRef r = p;
    r.master = p.master.flat_slice(offset, count);
    r.grad = p.grad.flat_slice(offset, count);
    r.exp_avg = p.exp_avg.flat_slice(offset, count);
    r.exp_avg_sq = p.exp_avg_sq.flat_slice(offset, count);
    ranges.push_back(r);
  }
  k.adam_step(ranges, step);
  EXPECT_EQ(values(p.master), values(w.master));
  EXPECT_EQ(values(p.exp_avg_sq), values(w.exp_avg_sq));
}

}  // namespace
}  // namespace ptdp::test
