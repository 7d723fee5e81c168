// A step saved under one split of a tensor reads back under any other.
#include <gtest/gtest.h>

#include <ostream>

#include "store_test_support.hpp"

namespace ptdp::ckptfs::test {
namespace {

struct Layout {
  const char* name;
  int dim;    // split dimension, -1: whole
  int parts;
};

void PrintTo(const Layout& layout, std::ostream* os) { *os << layout.name; }

std::vector<Part> parts_of(const std::vector<int64_t>& shape, const Layout& layout) {
  if (layout.dim < 0) return {Part{std::vector<int64_t>(shape.size(), 0), shape}};
  return split(shape, layout.dim, layout.parts);
}

class ReshardTest : public ::testing::TestWithParam<Layout> {
 protected:
  ReshardTest() { store.open(scratch.path().string()); }
  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{false}};
};

// Saved as the parameter says, read back in every layout and in an unaligned window.
TEST_P(ReshardTest, MatrixReadsBackInEveryLayout) {
  const std::vector<int64_t> shape{8, 6};
  const std::vector<float> values = global_values(shape);
  save_layout(store, 1, "w", shape, values, parts_of(shape, GetParam()));
  const Layout reads[] = {{"whole", -1, 1}, {"rows/2", 0, 2}, {"rows/4", 0, 4}, {"rows/8", 0, 8},
                          {"cols/2", 1, 2}, {"cols/3", 1, 3}, {"cols/6", 1, 6}};
  for (const Layout& read : reads)
    for (const Part& part : parts_of(shape, read))
      EXPECT_EQ(read_part(store, 1, "w", shape, part), cut(values, shape, part.offset, part.shape))
          << "read as " << read.name << " at offset [" << part.offset[0] << ", " << part.offset[1] << "]";
  const Part window{{1, 1}, {5, 4}};
  EXPECT_EQ(read_part(store, 1, "w", shape, window), cut(values, shape, window.offset, window.shape));
  const Part empty{{3, 2}, {0, 4}};
  EXPECT_TRUE(read_part(store, 1, "w", shape, empty).empty());
}

INSTANTIATE_TEST_SUITE_P(SavedAs, ReshardTest,
                         ::testing::Values(Layout{"whole", -1, 1}, Layout{"rows2", 0, 2},
                                           Layout{"cols3", 1, 3}, Layout{"rows4", 0, 4}),
                         [](const auto& info) { return std::string(info.param.name); });

// The QKV weight's layout: [3, h, h] split on the middle dimension, saved with t = 2, loaded
// with t = 1 and t = 4.
TEST(ReshardQkv, TensorParallelTwoLoadsAsOneAndFour) {
  ScratchFolder scratch;
  FsCheckpointStore store{FsCheckpointStore::Options{false}};
  store.open(scratch.path().string());
  const std::vector<int64_t> shape{3, 8, 4};
  const std::vector<float> values = global_values(shape, -3.0f);
  save_layout(store, 2, "layers.0.attn.qkv.weight", shape, values, split(shape, 1, 2));
  EXPECT_EQ(read_part(store, 2, "layers.0.attn.qkv.weight", shape, {{0, 0, 0}, shape}), values);
  for (const Part& part : split(shape, 1, 4))
    EXPECT_EQ(read_part(store, 2, "layers.0.attn.qkv.weight", shape, part),
              cut(values, shape, part.offset, part.shape));
  for (const Part& part : split(shape, 2, 2))
    EXPECT_EQ(read_part(store, 2, "layers.0.attn.qkv.weight", shape, part),
              cut(values, shape, part.offset, part.shape));
}

}  // namespace
}  // namespace ptdp::ckptfs::test
