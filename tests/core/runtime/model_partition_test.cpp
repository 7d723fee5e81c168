#include <gtest/gtest.h>

#include <ptdp/error.hpp>

#include "runtime/model_partition.hpp"

namespace ptdp {
namespace {

TEST(ModelPartition, InterleavedChunksHoldVirtualStages) {
  // 8 layers, p = 2, v = 2: virtual stages of 2 layers; stage 0 holds virtual stages 0 and 2.
  const ChunkLayout s0c0 = chunk_layout(8, 2, 2, 0, 0);
  const ChunkLayout s0c1 = chunk_layout(8, 2, 2, 0, 1);
  const ChunkLayout s1c1 = chunk_layout(8, 2, 2, 1, 1);
  EXPECT_EQ(s0c0.virtual_stage, 0);
  EXPECT_EQ(s0c0.first_layer, 0);
  EXPECT_TRUE(s0c0.has_embedding);
  EXPECT_FALSE(s0c0.has_head);
  EXPECT_EQ(s0c1.virtual_stage, 2);
  EXPECT_EQ(s0c1.first_layer, 4);
  EXPECT_EQ(s0c1.num_layers, 2);
  EXPECT_EQ(s1c1.virtual_stage, 3);
  EXPECT_TRUE(s1c1.has_head);
}

TEST(ModelPartition, SingleStageHoldsEverything) {
  const ChunkLayout c = chunk_layout(4, 1, 1, 0, 0);
  EXPECT_TRUE(c.has_embedding);
  EXPECT_TRUE(c.has_head);
  EXPECT_EQ(c.num_layers, 4);
}

TEST(ModelPartition, RejectsUnevenSplit) { EXPECT_THROW(chunk_layout(6, 2, 2, 0, 0), Error); }

}  // namespace
}  // namespace ptdp
