#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "support/shard.hpp"
#include "support/temp_dir.hpp"
#include "support/tensor_folder.hpp"

namespace ptdp::test {
namespace {

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

TEST(Shard, SliceTakesTheRangeAlongTheShardDimension) {
  // [3, 4, 2] split on dim 1 into two: rank 1 holds rows 2..3 of each of the 3 blocks.
  ShardLayout l{"qkv", {3, 4, 2}, 1, 2, {3, 2, 2}};
  const std::vector<float> local = slice_global(l, iota(24));
  EXPECT_EQ(local, (std::vector<float>{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23}));
  std::vector<float> global(24, -1.0f);
  place_local(l, local, global);
  EXPECT_EQ(global[4], 4.0f);
  EXPECT_EQ(global[23], 23.0f);
  EXPECT_EQ(global[0], -1.0f);
}

TEST(Shard, AssembleJoinsShardsAndChecksReplicas) {
  const std::vector<float> w = iota(24), b = iota(4);
  std::vector<std::vector<LocalTensor>> ranks(2);
  for (int r = 0; r < 2; ++r) {
    ShardLayout lw{"w", {3, 4, 2}, 1, 2 * r, {3, 2, 2}};
    ranks[r].push_back({lw, slice_global(lw, w)});
    ranks[r].push_back({ShardLayout{"b", {4}, -1, 0, {4}}, b});
  }
  TensorMap all = assemble(ranks);
  EXPECT_EQ(all.at("w").values, w);
  EXPECT_EQ(all.at("w").shape, (std::vector<int64_t>{3, 4, 2}));
  EXPECT_EQ(all.at("b").values, b);

  ranks[1][1].values[2] += 1.0f;  // replicas disagree
  EXPECT_THROW(assemble(ranks), Error);
  ranks[1][1].values[2] -= 1.0f;
  ranks.pop_back();  // half of w held by nobody
  EXPECT_THROW(assemble(ranks), Error);
}

TEST(Shard, LayoutOutsideTheGlobalShapeIsRefused) {
  ParamRef p;
  p.name = "layers.0.mlp.fc1.weight";
  p.global_shape = {8, 4};
  p.shard_dim = 0;
  p.shard_offset = 6;
  p.master.shape = {4, 4};
  try {
    shard_layout(p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.mlp.fc1.weight"), std::string::npos);
  }
  p.shard_offset = 4;
  EXPECT_NO_THROW(shard_layout(p));
  p.master.shape = {4, 3};
  EXPECT_THROW(shard_layout(p), Error);
}

TEST(TensorFolder, RoundTripsAndRefusesATruncatedFile) {
  TempDir dir;
  TensorFolderWriter writer;
  writer.add("a", {2, 3}, iota(6));
  writer.add("ids", {3}, std::vector<int32_t>{7, -1, 9});
  writer.meta()["note"] = "x";
  writer.write(dir.path());
  TensorMap read = read_tensor_folder(dir.path());
  EXPECT_EQ(read.at("a").values, iota(6));
  EXPECT_EQ(read.at("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(read.at("ids").values, (std::vector<float>{7, -1, 9}));

  std::filesystem::resize_file(dir.path() / "data.bin", 20);
  EXPECT_THROW(read_tensor_folder(dir.path()), Error);
  EXPECT_THROW(read_tensor_folder(dir.path() / "missing"), Error);
}

}  // namespace
}  // namespace ptdp::test
