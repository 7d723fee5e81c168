// kernels-ref layer by layer: the exact dropout sites, weight tying, buffer aliasing, Adam's
// closed form, memory operations, and every misuse reported with a message that names it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <ptdp/counter_rng.hpp>

#include "ref_kernels.hpp"
#include "support/gpt_fixtures.hpp"
#include "support/thread_group.hpp"

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
  m.seed = 42;
  return m;
}

Tensor ids(std::vector<int32_t>& v, const ModelSpec& m) {
  return Tensor{v.data(), DType::I32, {m.seq_len, m.micro_batch}, {}};
}

void load(const std::vector<ParamRef>& params, const TensorMap& global) {
  for (const ParamRef& p : params) {
    const std::vector<float> local = slice_global(shard_layout(p), global.at(p.name).values);
    std::copy(local.begin(), local.end(), p.master.as<float>());
  }
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.as<float>(), t.as<float>() + t.numel()); }

// Runs `fn` and returns the ptdp::Error's message, or "" when nothing was thrown.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR(statement, text) EXPECT_PRED_FORMAT2(::testing::IsSubstring, text, error_of([&] { statement; }))

TEST(KernelsRefEmbedding, IsTheLookupPlusPositionUnderTheDropoutMaskOnEveryRank) {
  ModelSpec m = tiny();
  m.dropout = 0.5f;
  const TensorMap global = [&] {
    RefKernels k;
    k.bind({m, 0, 1, nullptr, 0});
    return make_initial_weights(k.make_embedding()->parameters(), 1);
  }();
  std::vector<int32_t> tokens{0, 9, 3, 4, 5, 6, 7, 9};  // both vocab shards are hit
  const MicroBatch mb{1, 3, 5};
  const int64_t s = m.seq_len, b = m.micro_batch, h = m.hidden;
  std::vector<std::vector<float>> out(2), dpos(2);

  ThreadGroup group(2, "tp");
  run_ranks(group, [&](int r) {
    RefKernels k;
    k.bind({m, r, 2, group.rank(r), 0});
    auto emb = k.make_embedding();
    load(emb->parameters(), global);
    OwnedTensor y = k.allocate({s, b, h}, DType::F32), dy = k.allocate({s, b, h}, DType::F32);
    emb->forward(mb, ids(tokens, m), y.view, true);
    out[r] = values(y.view);
    std::fill(dy.view.as<float>(), dy.view.as<float>() + dy.view.numel(), 1.0f);
    emb->backward(mb, dy.view);
    dpos[r] = values(emb->parameters()[1].grad);
  });

  const auto& word = global.at("embedding.word").values;
  const auto& pos = global.at("embedding.position").values;
  int dropped = 0;
  std::vector<float> want_dpos(s * h, 0.0f);
  for (int64_t p = 0; p < s; ++p)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t f = 0; f < h; ++f) {
        const uint64_t element = ((mb.first_sample + j) * s + p) * h + f;
        const bool keep = rng::dropout_keep(m.seed, mb.step, 0, element, m.dropout);
        const float mask = keep ? 2.0f : 0.0f;
        dropped += !keep;
        const float want = (word[tokens[p * b + j] * h + f] + pos[p * h + f]) * mask;
        EXPECT_EQ(out[0][(p * b + j) * h + f], want) << p << " " << j << " " << f;
        want_dpos[p * h + f] += mask;
      }
  EXPECT_EQ(out[1], out[0]);
  EXPECT_EQ(dpos[0], want_dpos);
  EXPECT_EQ(dpos[1], want_dpos);
  EXPECT_GT(dropped, 10);
  EXPECT_LT(dropped, 54);
}

TEST(KernelsRefHead, SharesTheWordMatrixWhenTiedAndOwnsACopyOtherwise) {
  const ModelSpec m = tiny();
  RefKernels k;
  k.bind({m, 0, 1, nullptr, 0});
  auto emb = k.make_embedding();
  auto tied = k.make_head(emb.get());
  auto own = k.make_head(nullptr);
  ASSERT_EQ(tied->parameters().size(), 2u);
  EXPECT_EQ(tied->parameters()[0].name, "head.ln.weight");
  ASSERT_EQ(own->parameters().size(), 3u);
  const ParamRef copy = own->parameters()[2];
  EXPECT_EQ(copy.name, "embedding.word");
  EXPECT_EQ(copy.global_shape, (std::vector<int64_t>{m.padded_vocab, m.hidden}));
  EXPECT_NE(copy.master.data, emb->parameters()[0].master.data);

  load(emb->parameters(), make_initial_weights(emb->parameters(), 1));
  load(tied->parameters(), make_initial_weights(tied->parameters(), 1));
  OwnedTensor x = k.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  OwnedTensor loss = k.allocate({1}, DType::F32), dx = k.allocate(x.view.shape, DType::F32);
  for (int64_t i = 0; i < x.view.numel(); ++i) x.view.as<float>()[i] = std::sin(0.3f * i);
  std::vector<int32_t> targets{1, 2, 3, 4, 5, 6, 7, 8};
  tied->forward({0, 0, 0}, x.view, ids(targets, m), loss.view, true);
  EXPECT_GT(loss.view.as<float>()[0], 0.0f);
  tied->backward({0, 0, 0}, 1.0f, dx.view);
  EXPECT_GT(k.sum_squares({emb->parameters()[0].grad}), 0.0);  // the head's gradient landed there
  EXPECT_GT(k.sum_squares({dx.view}), 0.0);
}

// Generation reads the logits the loss is made of: their cross entropy is the forward's loss, on
// one rank and on each vocabulary shard of a padded two-rank head.
TEST(KernelsRefHead, LogitsAreTheOnesTheLossIsMadeOf) {
  ModelSpec m = tiny();
  m.vocab = 9;  // padded to 10 at t = 2: rank 1's last row is padding
  const int64_t n = m.seq_len * m.micro_batch;
  const TensorMap global = [&] {
    RefKernels k;
    k.bind({m, 0, 1, nullptr, 0});
    auto head = k.make_head(nullptr);
    return make_initial_weights(head->parameters(), 1);
  }();
  std::vector<int32_t> targets{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> input(n * m.hidden);
  for (size_t i = 0; i < input.size(); ++i) input[i] = std::sin(0.3f * i);
  std::vector<std::vector<float>> logits(2);
  std::vector<float> loss(2);
  ThreadGroup group(2, "tp");
  run_ranks(group, [&](int r) {
    RefKernels k;
    k.bind({m, r, 2, group.rank(r), 0});
    auto head = k.make_head(nullptr);
    load(head->parameters(), global);
    const Tensor x{input.data(), DType::F32, {m.seq_len, m.micro_batch, m.hidden}, {}};
    OwnedTensor out = k.allocate({m.seq_len, m.micro_batch, m.padded_vocab / 2}, DType::F32);
    OwnedTensor l = k.allocate({1}, DType::F32);
    head->logits({0, 0, 0, false}, x, out.view);
    head->forward({0, 0, 0, false}, x, ids(targets, m), l.view, false);
    logits[r] = values(out.view);
    loss[r] = l.view.as<float>()[0];
  });
  EXPECT_EQ(loss[0], loss[1]);
  const int64_t rows = m.padded_vocab / 2;
  double sum = 0;
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> row;
    for (int r = 0; r < 2; ++r)
      for (int64_t c = 0; c < rows; ++c)
        if (r * rows + c < m.vocab) row.push_back(logits[r][t * rows + c]);
    double max = row[0], z = 0;
    for (double v : row) max = std::max(max, v);
    for (double v : row) z += std::exp(v - max);
    sum += std::log(z) + max - row[targets[t]];
  }
  EXPECT_NEAR(sum / n, loss[0], 1e-5);
  std::vector<float> wrong{1.0f};
  RefKernels k;
  k.bind({m, 0, 1, nullptr, 0});
  EXPECT_ERROR(k.make_head(nullptr)->logits({}, Tensor{input.data(), DType::F32, {m.seq_len, m.micro_batch, m.hidden}, {}},
                                            Tensor{wrong.data(), DType::F32, {1}, {}}),
               "head logits: logits");
}

TEST(KernelsRefBinding, InvalidShapesAndGroupsAreRefused) {
  ThreadGroup pair(2, "tp[pp=0,dp=0]");
  struct Case {
    std::function<void(KernelsBinding&)> change;
    const char* message;
  };
  const std::vector<Case> cases{
      {[](KernelsBinding& b) { b.model.heads = 3; }, "model.hidden (8) must be divisible by model.heads (3)"},
      {[](KernelsBinding& b) { b.model.heads = 8; b.model.padded_vocab = 12; b.tp_size = 4; b.tp = nullptr; },
       "tp_size is 4 but no tensor-parallel communicator was given"},
      {[](KernelsBinding& b) { b.tp_size = 4; },
       "model.heads (2) must be divisible by the tensor-parallel size (4)"},
      {[](KernelsBinding& b) { b.model.ffn_hidden = 31; },
       "model.ffn_hidden (31) must be divisible by the tensor-parallel size (2)"},
      {[](KernelsBinding& b) { b.model.padded_vocab = 9; }, "model.padded_vocab (9) is smaller than model.vocab (10)"},
      {[](KernelsBinding& b) { b.model.vocab = 11; b.model.padded_vocab = 11; },
       "model.padded_vocab (11) must be divisible by the tensor-parallel size (2)"},
      {[](KernelsBinding& b) { b.model.dropout = 1.0f; }, "model.dropout must be in [0, 1)"},
      {[](KernelsBinding& b) { b.model.layers = 0; }, "model.layers must be positive"},
      {[](KernelsBinding& b) { b.tp_rank = 2; }, "tp_rank 2 is outside the group of 2"},
      {[&](KernelsBinding& b) { b.tp = pair.rank(1); }, "'tp[pp=0,dp=0]' says rank 1 but tp_rank is 0"},
      {[&](KernelsBinding& b) { b.tp_size = 1; }, "'tp[pp=0,dp=0]' has 2 ranks but tp_size is 1"},
  };
  for (const Case& c : cases) {
    KernelsBinding binding{tiny(), 0, 2, pair.rank(0), 0};
    c.change(binding);
    RefKernels k;
    EXPECT_ERROR(k.bind(binding), c.message);
  }
  RefKernels k;
  EXPECT_ERROR(k.make_embedding(), "make_embedding before bind()");
  k.bind({tiny(), 0, 1, nullptr, 0});
  EXPECT_ERROR(k.bind({tiny(), 0, 1, nullptr, 0}), "bind() was called twice");
  EXPECT_ERROR(k.make_block(2), "make_block(2): the model has layers 0..1");
  RefKernels other;
  other.bind({tiny(), 0, 1, nullptr, 0});
  auto foreign = other.make_embedding();
  EXPECT_ERROR(k.make_head(foreign.get()), "an embedding layer that this backend did not make");
  EXPECT_ERROR(RefKernels(kref::RefKernelsOptions{0}), "threads must be at least 1");
}

TEST(KernelsRefInputs, BadTokensTargetsAndTensorsAreRefused) {
  const ModelSpec m = tiny();
  RefKernels k;
  k.bind({m, 0, 1, nullptr, 0});
  auto emb = k.make_embedding();
  auto head = k.make_head(emb.get());
  const std::vector<int64_t> shape{m.seq_len, m.micro_batch, m.hidden};
  OwnedTensor x = k.allocate(shape, DType::F32), loss = k.allocate({1}, DType::F32);
  std::vector<int32_t> good{1, 2, 3, 4, 5, 6, 7, 8}, bad{1, 2, 3, 4, 5, 10, 7, 8};
  EXPECT_ERROR(emb->forward({0, 0, 0}, ids(bad, m), x.view, true),
               "embedding forward: token: id 10 at position 2 of sequence 1 is outside the vocabulary [0, 10)");
  EXPECT_ERROR(head->forward({0, 0, 0}, x.view, ids(bad, m), loss.view, true), "head forward: target: id 10");
  Tensor wrong = x.view;
  wrong.shape = {m.seq_len, m.micro_batch, m.hidden / 2};
  EXPECT_ERROR(emb->forward({0, 0, 0}, ids(good, m), wrong, true),
               "embedding forward: out must be f32 [4, 2, 8], got f32 [4, 2, 4]");
  Tensor on_gpu = x.view;
  on_gpu.device = Device{MemoryKind::Cuda, 0};
  EXPECT_ERROR(k.make_block(0)->forward({0, 0, 0}, on_gpu, x.view, true), "layers.0 forward: in is not in host memory");
  EXPECT_ERROR(head->forward({0, 0, 0}, x.view, ids(good, m), x.view, true), "head forward: loss must be f32 [1]");
  EXPECT_ERROR(k.copy(loss.view, x.view), "sizes differ");
}

TEST(KernelsRefAdam, FollowsTheDecoupledClosedForm) {
  RefKernels k;
  k.bind({tiny(), 0, 1, nullptr, 0});
  auto block = k.make_block(0);
  std::vector<ParamRef> params;
  for (const ParamRef& p : block->parameters())
    if (p.name == "layers.0.ln1.weight" || p.name == "layers.0.mlp.fc1.weight") params.push_back(p);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_FALSE(params[0].weight_decay);
  EXPECT_TRUE(params[1].weight_decay);

  AdamStep step;
  step.lr = 0.01f;
  step.beta1 = 0.8f;
  step.beta2 = 0.9f;
  step.eps = 1e-3f;
  step.weight_decay = 0.5f;
  step.grad_scale = 0.25f;
  for (const ParamRef& p : params) {
    const int64_t n = p.master.numel();
    std::vector<double> w(n), m(n, 0.0), v(n, 0.0);
    for (int64_t i = 0; i < n; ++i) w[i] = p.master.as<float>()[i] = 0.1f * std::sin(float(i));
    for (int t = 1; t <= 2; ++t) {
      std::vector<double> g(n);
      for (int64_t i = 0; i < n; ++i) g[i] = p.grad.as<float>()[i] = std::cos(float(i * t));
      step.step = t;
      k.adam_step({p}, step);
      for (int64_t i = 0; i < n; ++i) {
        const double gs = g[i] * step.grad_scale;
        m[i] = step.beta1 * m[i] + (1 - step.beta1) * gs;
        v[i] = step.beta2 * v[i] + (1 - step.beta2) * gs * gs;
        if (p.weight_decay) w[i] *= 1 - double(step.lr) * step.weight_decay;
        const double mhat = m[i] / (1 - std::pow(double(step.beta1), t));
        const double vhat = v[i] / (1 - std::pow(double(step.beta2), t));
        w[i] -= step.lr * mhat / (std::sqrt(vhat) + step.eps);
      }
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(p.master.as<float>()[i], w[i], 1e-6) << p.name << " " << i;
  }
  step.step = 0;
  EXPECT_ERROR(k.adam_step(params, step), "adam step number must start at 1");
}

TEST(KernelsRefMemory, AllocatesZeroedHostMemoryAndCopies) {
  RefKernels k;
  EXPECT_EQ(k.device().kind, MemoryKind::Host);
  EXPECT_EQ(k.activation_dtype(), DType::F32);
  EXPECT_EQ(k.stream(), nullptr);
  OwnedTensor a = k.allocate({3, 7}, DType::F32), ids = k.allocate({5}, DType::I64);
  for (int64_t i = 0; i < 21; ++i) EXPECT_EQ(a.view.as<float>()[i], 0.0f);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(ids.view.as<int64_t>()[i], 0);
  std::vector<float> src(21);
  double want = 0.0;
  for (int i = 0; i < 21; ++i) {
    src[i] = 0.1f * i - 1.0f;
    want += double(src[i]) * src[i];
  }
  k.copy_from_host(a.view, src.data());
  OwnedTensor b = k.allocate({21}, DType::F32);
  k.copy(b.view, a.view);
  std::vector<float> back(21);
  k.copy_to_host(back.data(), b.view);
  EXPECT_EQ(back, src);
  EXPECT_NEAR(k.sum_squares({a.view, b.view}), 2 * want, 1e-12 * want);
  k.fill_zero(a.view);
  EXPECT_EQ(k.sum_squares({a.view}), 0.0);
  EXPECT_ERROR(k.sum_squares({ids.view}), "sum_squares tensor 0 must be f32");
}

}  // namespace
}  // namespace ptdp::test
