// Every tensor-parallel layout trains the same model: same losses, gradients and Adam updates as
// one rank, within float rounding, with dropout on (the masks are layout-independent) and a
// vocabulary that needs padding.
#include <gtest/gtest.h>

#include "ref_training_run.hpp"

namespace ptdp::test {
namespace {

ModelSpec small_model(int vocab, int padded_vocab, float dropout) {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 32;
  m.heads = 4;
  m.seq_len = 8;
  m.vocab = vocab;
  m.padded_vocab = padded_vocab;
  m.ffn_hidden = 128;
  m.micro_batch = 2;
  m.dropout = dropout;
  m.seed = 99;
  return m;
}

TrainingPlan two_steps(const ModelSpec& m, int tp) {
  TrainingPlan plan;
  plan.tp = tp;
  plan.adam.lr = 1e-2f;
  plan.adam.weight_decay = 0.1f;
  // The key bias has an identically zero gradient (softmax ignores a shift shared by a row), so
  // what it holds is rounding noise (~1e-10) that Adam divides by sqrt(v) + eps; an eps far
  // above that noise keeps layouts comparable while every real gradient (>= 1e-7) still moves.
  plan.adam.eps = 1e-4f;
  for (int step = 0; step < 2; ++step)
    plan.batches.push_back({make_token_batch(m, 5, 2 * step), make_token_batch(m, 5, 2 * step + 1)});
  return plan;
}

void expect_close(const TensorMap& got, const TensorMap& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, w] : want) {
    const HostTensor& g = got.at(name);
    ASSERT_EQ(g.shape, w.shape) << what << " " << name;
    EXPECT_LT(relative_error(g.values, w.values), tolerance) << what << " " << name;
  }
}

void expect_losses_close(const TrainingResult& got, const TrainingResult& want) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t s = 0; s < want.losses.size(); ++s)
    EXPECT_LT(relative_error(got.losses[s], want.losses[s]), 1e-6) << "step " << s;
}

// Rows of the word matrix past the vocabulary are never looked up and never win a softmax.
void expect_padding_has_no_gradient(const TensorMap& grads, const ModelSpec& m) {
  const HostTensor& word = grads.at("embedding.word");
  for (int64_t row = m.vocab; row < m.padded_vocab; ++row)
    for (int64_t f = 0; f < m.hidden; ++f) ASSERT_EQ(word.values[row * m.hidden + f], 0.0f) << "row " << row;
}

class LayoutEquivalence : public ::testing::TestWithParam<int> {};

TEST_P(LayoutEquivalence, MatchesOneRankWithDropoutAndPaddedVocab) {
  const ModelSpec m = small_model(61, 64, 0.1f);
  const TensorMap initial = make_initial_weights(global_parameters(m), 1);
  const TrainingResult one = train(m, initial, two_steps(m, 1));
  const TrainingResult many = train(m, initial, two_steps(m, GetParam()));
  expect_losses_close(many, one);
  expect_close(many.first_grads, one.first_grads, 1e-5, "gradient");
  expect_close(many.final_weights, one.final_weights, 1e-5, "weights");
  expect_padding_has_no_gradient(many.first_grads, m);
  expect_padding_has_no_gradient(one.first_grads, m);
}

INSTANTIATE_TEST_SUITE_P(KernelsRef, LayoutEquivalence, ::testing::Values(2, 4),
                         [](const auto& info) { return "tp" + std::to_string(info.param); });

TEST(KernelsRefTensorParallel, ARankHoldingOnlyPaddingStillAgrees) {
  // padded_vocab 60 over 4 ranks: rank 3 holds rows 45..59, all of them padding.
  const ModelSpec m = small_model(45, 60, 0.1f);
  const TensorMap initial = make_initial_weights(global_parameters(m), 2);
  const TrainingResult one = train(m, initial, two_steps(m, 1));
  const TrainingResult four = train(m, initial, two_steps(m, 4));
  expect_losses_close(four, one);
  expect_close(four.first_grads, one.first_grads, 1e-5, "gradient");
  expect_padding_has_no_gradient(four.first_grads, m);
}

TEST(KernelsRefTensorParallel, DropoutChangesTheLossAndDependsOnTheStep) {
  const ModelSpec with = small_model(61, 64, 0.3f), without = small_model(61, 64, 0.0f);
  const TensorMap initial = make_initial_weights(global_parameters(with), 3);
  TrainingPlan plan = two_steps(with, 2);
  plan.adam.lr = 0.0f;  // same weights in both steps: only the step's masks differ
  plan.batches[1] = plan.batches[0];
  const TrainingResult dropped = train(with, initial, plan);
  const TrainingResult plain = train(without, initial, plan);
  EXPECT_GT(std::abs(dropped.losses[0][0] - plain.losses[0][0]), 1e-3);
  EXPECT_NE(dropped.losses[0][0], dropped.losses[1][0]);
  EXPECT_EQ(plain.losses[0][0], plain.losses[1][0]);
}

TEST(KernelsRefTensorParallel, OneRankWithoutACommunicatorIsTheSame) {
  const ModelSpec m = small_model(61, 64, 0.1f);
  const TensorMap initial = make_initial_weights(global_parameters(m), 4);
  TrainingPlan plan = two_steps(m, 1);
  const TrainingResult with_group = train(m, initial, plan);
  plan.null_communicator_for_tp1 = true;
  const TrainingResult without = train(m, initial, plan);
  EXPECT_EQ(without.losses, with_group.losses);
  for (const auto& [name, w] : with_group.final_weights) EXPECT_EQ(without.final_weights.at(name).values, w.values) << name;
}

}  // namespace
}  // namespace ptdp::test
