#include <gtest/gtest.h>

#include <cmath>

#include <ptdp/counter_rng.hpp>

#include "runtime/parameter_init.hpp"

namespace ptdp {
namespace {

ParamRef make_ref(const std::string& name, std::vector<int64_t> global, int shard_dim, int64_t offset,
                  std::vector<int64_t> local) {
  ParamRef r;
  r.name = name;
  r.global_shape = std::move(global);
  r.shard_dim = shard_dim;
  r.shard_offset = offset;
  r.master.shape = std::move(local);
  return r;
}

// The part a rank initializes equals the same part of the whole tensor: layouts start equal.
TEST(ParameterInit, ShardsAreSlicesOfTheGlobalTensor) {
  const auto whole = initial_values(make_ref("layers.0.attn.qkv.weight", {3, 8, 6}, -1, 0, {3, 8, 6}), 7, 2, 256);
  for (int part = 0; part < 2; ++part) {
    const auto ref = make_ref("layers.0.attn.qkv.weight", {3, 8, 6}, 1, part * 4, {3, 4, 6});
    const auto local = initial_values(ref, 7, 2, 256);
    for (int q = 0; q < 3; ++q)
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 6; ++c)
          EXPECT_EQ(local[(q * 4 + r) * 6 + c], whole[(q * 8 + part * 4 + r) * 6 + c]);
  }
}

TEST(ParameterInit, Gpt2Scheme) {
  const auto bias = initial_values(make_ref("layers.1.mlp.fc1.bias", {16}, -1, 0, {16}), 1, 4, 256);
  for (float v : bias) EXPECT_EQ(v, 0.0f);
  const auto gain = initial_values(make_ref("layers.1.ln2.weight", {16}, -1, 0, {16}), 1, 4, 256);
  for (float v : gain) EXPECT_EQ(v, 1.0f);
  auto stddev = [](const std::vector<float>& v) {
    double s = 0;
    for (float x : v) s += double(x) * x;
    return std::sqrt(s / v.size());
  };
  const auto fc1 = initial_values(make_ref("layers.1.mlp.fc1.weight", {256, 64}, -1, 0, {256, 64}), 1, 4, 256);
  const auto fc2 = initial_values(make_ref("layers.1.mlp.fc2.weight", {64, 256}, -1, 0, {64, 256}), 1, 4, 256);
  EXPECT_NEAR(stddev(fc1), 0.02, 0.001);
  EXPECT_NEAR(stddev(fc2), 0.02 / std::sqrt(8.0), 0.0005);
  EXPECT_NE(fc1[0], initial_values(make_ref("layers.2.mlp.fc1.weight", {256, 64}, -1, 0, {256, 64}), 1, 4, 256)[0]);
}

TEST(ParameterInit, PaddedVocabRowsAreZero) {
  // vocab 5 padded to 6 for t = 2: the second shard holds rows 3..5, row 5 is padding.
  const auto ref = make_ref("embedding.word", {6, 4}, 0, 3, {3, 4});
  const auto v = initial_values(ref, 3, 2, 5);
  for (int c = 0; c < 4; ++c) {
    EXPECT_NE(v[0 * 4 + c], 0.0f);
    EXPECT_EQ(v[2 * 4 + c], 0.0f);
  }
}

// Large tensors are drawn on several threads, each from its own start index: the values must
// not depend on that split.
TEST(ParameterInit, ThreadedDrawEqualsSequentialWalk) {
  const auto ref = make_ref("layers.0.mlp.fc1.weight", {3000, 1024}, 0, 1000, {1000, 1024});
  const auto values = initial_values(ref, 11, 2, 256);
  const uint64_t key = rng::name_key(11, ref.name);
  int64_t checked = 0;
  for_each_global_index(ref, [&](int64_t local_i, int64_t global_i) {
    if (local_i % 4099 == 0 || local_i == ref.master.numel() - 1) {
      EXPECT_EQ(values[local_i], 0.02f * rng::normal(key, 0, global_i)) << local_i;
      ++checked;
    }
  });
  EXPECT_GT(checked, 200);
}

TEST(ParameterInit, ShapeRankMismatchIsAnError) {
  EXPECT_THROW(initial_values(make_ref("x.weight", {4, 4}, 0, 0, {16}), 1, 1, 1), Error);
}

}  // namespace
}  // namespace ptdp
