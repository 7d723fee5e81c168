// FLOPs per step against the paper's formulas (DESIGN.md §1), computed by hand.
#include <gtest/gtest.h>

#include <string>

#include "metrics/flops.hpp"

namespace ptdp {
namespace {

RunConfig small_model(const std::string& recompute) {
  RunConfig config;
  config.model.layers = 2;
  config.model.hidden = 4;
  config.model.seq_len = 8;
  config.model.vocab = 16;
  config.model.padded_vocab = 16;
  config.model.ffn_hidden = 16;
  config.parallel.global_batch = 2;
  config.parallel.recompute = recompute;
  return config;
}

TEST(Flops, FullRecomputationIsEquation3) {
  // 96·B·s·l·h²·(1 + s/(6h) + V/(16lh)) = 96·2·8·2·16·(1 + 8/24 + 16/128) = 49152·35/24
  EXPECT_DOUBLE_EQ(flops_per_step(small_model("full")), 71680.0);
  EXPECT_NE(std::string(flops_formula_name(small_model("full"))).find("96*B*s*l*h^2"), std::string::npos);
}

TEST(Flops, WithoutRecomputation) {
  // 72·B·s·l·h²·(1 + s/(6h) + V/(12lh)) = 72·2·8·2·16·(1 + 8/24 + 16/96) = 36864·3/2
  EXPECT_DOUBLE_EQ(flops_per_step(small_model("none")), 55296.0);
  EXPECT_NE(std::string(flops_formula_name(small_model("none"))).find("72*B*s*l*h^2"), std::string::npos);
}

TEST(Flops, PaperScaleMatchesTheClosedForm) {
  // GPT-3 175B as in the paper's Table 1: l=96, h=12288, s=2048, V=51200, B=1536.
  RunConfig config;
  config.model.layers = 96;
  config.model.hidden = 12288;
  config.model.seq_len = 2048;
  config.model.vocab = 51200;
  config.model.padded_vocab = 51200;
  config.model.ffn_hidden = 4 * 12288;
  config.parallel.global_batch = 1536;
  config.parallel.recompute = "full";
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double eq3 = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(flops_per_step(config) / eq3, 1.0, 1e-12);
  // The paper's Eq. 4: 300B tokens on 1024 GPUs at 140 TFLOP/s each train GPT-3 in about 34 days.
  const double days = 300e9 / (B * s) * flops_per_step(config) / (1024 * 140e12) / 86400;
  EXPECT_GT(days, 33.5);
  EXPECT_LT(days, 35.5);
}

TEST(Flops, UsesThePaddedVocabularyAndTheRealMlpWidth) {
  RunConfig config = small_model("none");
  config.model.padded_vocab = 20;  // the logits GEMM is 20 wide: +4 columns
  // 6·B·s·h per extra logit column: 6·2·8·4·4
  EXPECT_DOUBLE_EQ(flops_per_step(config), 55296.0 + 6 * 2 * 8 * 4 * 4);

  config = small_model("full");
  config.model.ffn_hidden = 24;  // 8 wider than 4h: each of 2 GEMMs gains 2·h·8 FLOPs per token
  EXPECT_DOUBLE_EQ(flops_per_step(config), 71680.0 + 4.0 * 2 * 2 * 8 * (2 * 2 * 4 * 8));
  EXPECT_NE(std::string(flops_formula_name(config)).find("ffn_hidden in place of 4h"), std::string::npos);
}

}  // namespace
}  // namespace ptdp
