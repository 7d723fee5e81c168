#include "runtime/gradient_zeroing.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/host_memory_kernels.hpp"

namespace ptdp {
namespace {

ParamRef param(const std::string& name, int64_t numel) {
  ParamRef p;
  p.name = name;
  p.global_shape = {numel};
  p.master = Tensor{nullptr, DType::F32, {numel}, Device{}};
  return p;
}

// A chunk's parameters as ModelChunk lists them, with the layer (unit) of each: the embedding's
// when it has one, two per block, the head's when it has one.
struct Chunk {
  std::vector<ParamRef> params;
  std::vector<int> units;
};

Chunk chunk_of(const ChunkLayout& layout) {
  Chunk c;
  int unit = 0;
  auto add = [&](const std::string& name, int64_t numel) {
    c.params.push_back(param(name, numel));
    c.units.push_back(unit);
  };
  if (layout.has_embedding) add("embedding.word", 40), add("embedding.position", 12), ++unit;
  for (int l = 0; l < layout.num_layers; ++l, ++unit) {
    const std::string block = "layers." + std::to_string(layout.first_layer + l);
    add(block + ".w", 30), add(block + ".b", 5);
  }
  if (layout.has_head) add("head.ln.weight", 4), add("head.ln.bias", 4);
  return c;
}

std::vector<std::string> names_of(const ChunkBuffers& buffers, const std::vector<Tensor>& zeroed) {
  std::vector<std::string> names;
  for (const Tensor& t : zeroed)
    for (const ParamRef& p : buffers.params())
      if (p.grad.data == t.data && p.grad.numel() == t.numel()) names.push_back(p.name);
  return names;
}

TEST(GradientZeroing, KernelsOfAbi16AndLaterWriteTheirBlocksGradients) {
  EXPECT_FALSE(blocks_write_first_gradients(5));
  EXPECT_TRUE(blocks_write_first_gradients(6));
  EXPECT_TRUE(blocks_write_first_gradients(7));
}

TEST(GradientZeroing, OnlyTheEmbeddingAndHeadStartFromZeroWhenBlocksWriteTheirOwn) {
  test::HostMemoryKernels kernels;
  const ChunkLayout whole{0, 0, 2, true, true};
  const Chunk c = chunk_of(whole);
  const ChunkBuffers buffers(kernels, c.params, c.units, false, 1 << 20, 1, true);
  EXPECT_EQ(names_of(buffers, gradients_to_zero(buffers, whole, true)),
            (std::vector<std::string>{"embedding.word", "embedding.position", "head.ln.weight", "head.ln.bias"}));
}

TEST(GradientZeroing, OlderKernelsGetTheWholeBufferZeroed) {
  test::HostMemoryKernels kernels;
  const ChunkLayout whole{0, 0, 2, true, true};
  const Chunk c = chunk_of(whole);
  const ChunkBuffers buffers(kernels, c.params, c.units, false, 1 << 20, 1, true);
  const std::vector<Tensor> zeroed = gradients_to_zero(buffers, whole, false);
  ASSERT_EQ(zeroed.size(), 1u);
  EXPECT_EQ(zeroed[0].data, buffers.grad().data);
  EXPECT_EQ(zeroed[0].numel(), buffers.grad().numel());
}

TEST(GradientZeroing, AChunkOfBlocksAloneZeroesNothing) {
  test::HostMemoryKernels kernels;
  const ChunkLayout middle{1, 2, 3, false, false};
  const Chunk c = chunk_of(middle);
  const ChunkBuffers buffers(kernels, c.params, c.units, false, 1 << 20, 1, true);
  EXPECT_TRUE(gradients_to_zero(buffers, middle, true).empty());
  const ChunkLayout last{2, 5, 1, false, true};
  const Chunk l = chunk_of(last);
  const ChunkBuffers last_buffers(kernels, l.params, l.units, false, 1 << 20, 1, true);
  EXPECT_EQ(names_of(last_buffers, gradients_to_zero(last_buffers, last, true)),
            (std::vector<std::string>{"head.ln.weight", "head.ln.bias"}));
}

}  // namespace
}  // namespace ptdp
