// The layout of a chunk's parameter buffers: last layer first, aligned, cut into buckets that
// cover the buffer exactly and split evenly over d.
#include "runtime/buffer_layout.hpp"

#include <gtest/gtest.h>

namespace ptdp {
namespace {

std::vector<LayoutEntry> chunk_of(const std::vector<int64_t>& numels) {
  std::vector<LayoutEntry> entries;
  for (size_t k = 0; k < numels.size(); ++k) entries.push_back({numels[k], static_cast<int>(k), false});
  return entries;
}

TEST(BufferLayout, LaysTheLastLayerFirstAlignedAndWithoutOverlap) {
  const auto entries = chunk_of({100, 7, 64, 1});
  const BufferLayout layout = plan_buffer_layout(entries, 1 << 20, 1);
  EXPECT_EQ(layout.offsets, (std::vector<int64_t>{192, 128, 64, 0}));
  ASSERT_EQ(layout.buckets.size(), 1u);
  EXPECT_EQ(layout.buckets[0].offset, 0);
  EXPECT_EQ(layout.buckets[0].size, 320);
  EXPECT_EQ(layout.buckets[0].final_after_unit, 0);
  EXPECT_EQ(layout.size, 320);
}

TEST(BufferLayout, BucketsCoverTheBufferAndSplitEvenlyOverD) {
  const auto entries = chunk_of({300, 300, 300, 300, 5000, 10});
  for (int d : {1, 2, 3, 4}) {
    const BufferLayout layout = plan_buffer_layout(entries, 600, d);
    int64_t next = 0;
    for (const GradientBucket& b : layout.buckets) {
      EXPECT_EQ(b.offset, next) << "d " << d;
      EXPECT_EQ(b.size % (kAlignElements * d), 0) << "d " << d;
      next = b.offset + b.size;
      for (size_t k : b.params) {
        EXPECT_GE(layout.offsets[k], b.offset);
        EXPECT_LE(layout.offsets[k] + entries[k].numel, b.offset + b.size);
      }
    }
    EXPECT_EQ(next, layout.size);
  }
}

TEST(BufferLayout, ABucketClosesAtItsSizeAndIsFinalAfterItsFirstLayer) {
  // Backward finishes units 5, 4, ... 0; buckets of at least 600 elements.
  const BufferLayout layout = plan_buffer_layout(chunk_of({300, 300, 300, 300, 5000, 10}), 600, 1);
  ASSERT_EQ(layout.buckets.size(), 3u);
  EXPECT_EQ(layout.buckets[0].params, (std::vector<size_t>{5, 4}));  // the large one closes it
  EXPECT_EQ(layout.buckets[0].final_after_unit, 4);
  EXPECT_EQ(layout.buckets[1].params, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(layout.buckets[1].final_after_unit, 2);
  EXPECT_EQ(layout.buckets[2].params, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(layout.buckets[2].final_after_unit, 0);
}

TEST(BufferLayout, ATiedEmbeddingGetsABucketOfItsOwn) {
  std::vector<LayoutEntry> entries = chunk_of({10, 10, 10});
  entries[2].alone = true;  // the head's own copy of the word embedding, listed last
  const BufferLayout layout = plan_buffer_layout(entries, 1 << 20, 2);
  ASSERT_EQ(layout.buckets.size(), 2u);
  EXPECT_TRUE(layout.buckets[0].alone);
  EXPECT_EQ(layout.buckets[0].params, (std::vector<size_t>{2}));
  EXPECT_FALSE(layout.buckets[1].alone);
  EXPECT_EQ(layout.buckets[1].params, (std::vector<size_t>{1, 0}));
}

TEST(BufferLayout, ARangeIsCutIntoThePiecesOfTheParametersInIt) {
  const auto entries = chunk_of({100, 7, 64, 1});  // offsets 192, 128, 64, 0
  const BufferLayout layout = plan_buffer_layout(entries, 1 << 20, 1);
  const std::vector<ParamRange> pieces = params_in_range(layout, entries, 60, 200);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].param, 2u);
  EXPECT_EQ(pieces[0].offset, 0);
  EXPECT_EQ(pieces[0].count, 64);
  EXPECT_EQ(pieces[1].param, 1u);
  EXPECT_EQ(pieces[1].count, 7);
  EXPECT_EQ(pieces[2].param, 0u);
  EXPECT_EQ(pieces[2].offset, 0);
  EXPECT_EQ(pieces[2].count, 8);
  EXPECT_TRUE(params_in_range(layout, entries, 1, 64).empty());  // padding only
}

}  // namespace
}  // namespace ptdp
