// The paper's formulas: parameter count, FLOPs per step and pipeline bubble.
#include <gtest/gtest.h>

#include <cmath>

#include "manifest/model_math.hpp"

namespace ptdp {
namespace {

RunConfig::Model gpt(int layers, int hidden, int heads, int vocab = 51200, int seq_len = 2048) {
  RunConfig::Model m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.vocab = vocab;
  m.seq_len = seq_len;
  return m;
}

TEST(ModelMath, ParameterCountIsThePapersFormula) {
  for (const auto& m : {gpt(4, 128, 4, 256, 128), gpt(24, 2048, 16), gpt(96, 12288, 96)}) {
    const double l = m.layers, h = m.hidden, V = m.vocab, s = m.seq_len;
    const double paper = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    EXPECT_NEAR(static_cast<double>(parameter_count(m)), paper, paper * 1e-12);
  }
}

TEST(ModelMath, ParameterCountsOfThePapersModels) {
  // Table 1 and Table 2 of the paper list these sizes in billions.
  EXPECT_NEAR(parameter_count(gpt(96, 12288, 96)) / 1e9, 174.6, 0.05);
  EXPECT_NEAR(parameter_count(gpt(24, 2304, 24)) / 1e9, 1.7, 0.05);
  EXPECT_NEAR(parameter_count(gpt(128, 25600, 160)) / 1e9, 1008.0, 0.5);
  // A small one by hand: 12·2·16² + 13·2·16 + (10+4)·16.
  EXPECT_EQ(parameter_count(gpt(2, 16, 2, 10, 4)), 6144 + 416 + 224);
}

TEST(ModelMath, FlopsPerStepAreEquationThree) {
  const RunConfig::Model m = gpt(96, 12288, 96);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  EXPECT_DOUBLE_EQ(flops_per_step(m, 1536, true), 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)));
  EXPECT_DOUBLE_EQ(flops_per_step(m, 1536, false), 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)));
  // The paper's Eq. 4 approximates Eq. 3 by 8·P FLOPs per token with recomputation, 6·P without.
  const double tokens = B * s, P = static_cast<double>(parameter_count(m));
  EXPECT_NEAR(flops_per_step(m, 1536, true) / tokens / (8 * P), 1.0, 0.03);
  EXPECT_NEAR(flops_per_step(m, 1536, false) / tokens / (6 * P), 1.0, 0.03);
}

TEST(ModelMath, FlopsFollowTheRecomputeSetting) {
  RunConfig c;
  c.model = gpt(24, 2048, 16);
  c.parallel.global_batch = 8;
  EXPECT_DOUBLE_EQ(flops_per_step(c), flops_per_step(c.model, 8, false));
  c.parallel.recompute = "full";
  EXPECT_DOUBLE_EQ(flops_per_step(c), flops_per_step(c.model, 8, true));
}

}  // namespace
}  // namespace ptdp
