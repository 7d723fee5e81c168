// Saved activations per microbatch slot: recomputation (forward without saving, then again with)
// and several microbatches in flight give the results of the plain sequential run.
#include <gtest/gtest.h>

#include "ref_training_run.hpp"

namespace ptdp::test {
namespace {

ModelSpec model() {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 16;
  m.heads = 2;
  m.seq_len = 6;
  m.vocab = 37;
  m.padded_vocab = 38;
  m.ffn_hidden = 64;
  m.micro_batch = 3;
  m.dropout = 0.2f;
  m.seed = 7;
  return m;
}

TrainingPlan plan(const ModelSpec& m) {
  TrainingPlan p;
  p.tp = 2;
  p.adam.lr = 1e-2f;
  p.batches.push_back({make_token_batch(m, 11, 0), make_token_batch(m, 11, 1), make_token_batch(m, 11, 2)});
  return p;
}

TEST(KernelsRefMicrobatches, RecomputeGivesIdenticalGradients) {
  const ModelSpec m = model();
  const TensorMap initial = make_initial_weights(global_parameters(m), 1);
  TrainingPlan p = plan(m);
  const TrainingResult saved = train(m, initial, p);
  p.recompute = true;
  const TrainingResult recomputed = train(m, initial, p);
  EXPECT_EQ(recomputed.losses, saved.losses);
  for (const auto& [name, g] : saved.first_grads)
    EXPECT_EQ(recomputed.first_grads.at(name).values, g.values) << name;
}

TEST(KernelsRefMicrobatches, AllInFlightMatchesSequential) {
  const ModelSpec m = model();
  const TensorMap initial = make_initial_weights(global_parameters(m), 2);
  TrainingPlan p = plan(m);
  const TrainingResult sequential = train(m, initial, p);
  p.order = MicrobatchOrder::AllForwardThenReverse;
  const TrainingResult in_flight = train(m, initial, p);
  EXPECT_EQ(in_flight.losses, sequential.losses);
  for (const auto& [name, g] : sequential.first_grads)  // summed in another order
    EXPECT_LT(relative_error(in_flight.first_grads.at(name).values, g.values), 1e-6) << name;
  p.recompute = true;
  const TrainingResult both = train(m, initial, p);
  for (const auto& [name, g] : in_flight.first_grads) EXPECT_EQ(both.first_grads.at(name).values, g.values) << name;
}

}  // namespace
}  // namespace ptdp::test
