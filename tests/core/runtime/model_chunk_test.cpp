// How a model chunk hands activation buffers from block to block.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/model_chunk.hpp"
#include "support/host_memory_kernels.hpp"

namespace ptdp {
namespace {

// out = in + 1 forward, din = 2 dout backward, each refusing to be handed its input as its
// output: the SDK does not promise that a block may write where it reads.
class AddOneBlock final : public TransformerBlock {
 public:
  std::vector<ParamRef> parameters() override { return {}; }
  void forward(const MicroBatch&, const Tensor& in, Tensor out, bool) override {
    if (in.data == out.data) throw Error("forward: out is in");
    for (int64_t i = 0; i < in.numel(); ++i) out.as<float>()[i] = in.as<float>()[i] + 1.0f;
  }
  void backward(const MicroBatch&, const Tensor& dout, Tensor din) override {
    if (dout.data == din.data) throw Error("backward: din is dout");
    for (int64_t i = 0; i < dout.numel(); ++i) din.as<float>()[i] = 2.0f * dout.as<float>()[i];
  }
  void release(int) override {}
};

class AddOneKernels final : public test::HostMemoryKernels {
 public:
  std::shared_ptr<TransformerBlock> make_block(int) override { return std::make_shared<AddOneBlock>(); }
};

std::vector<float> values(const Tensor& t) { return {t.as<float>(), t.as<float>() + t.numel()}; }

OwnedTensor filled(LayerKernels& kernels, const ModelSpec& m, float value) {
  OwnedTensor t = kernels.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  for (int64_t i = 0; i < t.view.numel(); ++i) t.view.as<float>()[i] = value;
  return t;
}

ModelSpec spec(int layers) {
  ModelSpec m;
  m.layers = layers;
  m.seq_len = 4;
  m.micro_batch = 2;
  m.hidden = 3;
  return m;
}

// Without recomputation the forward allocates the copy of its input and the first block's output,
// the backward the copy of its output gradient and the first block's input gradient, however many
// blocks there are: each further block writes the buffer the block before it read, which nothing
// reads again, where a new buffer would first have been zero-filled.
TEST(ModelChunkBuffers, EachBlockWritesTheBufferTheBlockBeforeItRead) {
  for (int layers : {1, 2, 6}) {
    AddOneKernels kernels;
    const ModelSpec m = spec(layers);
    ModelChunk chunk(kernels, ChunkLayout{0, 0, layers, false, false}, m, 0, nullptr, m.seq_len);
    const OwnedTensor input = filled(kernels, m, 0.5f), dout = filled(kernels, m, 1.0f);
    const MicroBatch mb;

    kernels.allocations = 0;
    const OwnedTensor out = chunk.forward(mb, input.view, MicrobatchTokens{}, Tensor{}, true);
    EXPECT_EQ(kernels.allocations, 2) << layers << " layers";
    EXPECT_EQ(values(out.view), std::vector<float>(size_t(input.view.numel()), 0.5f + float(layers)));

    kernels.allocations = 0;
    const OwnedTensor din = chunk.backward(mb, dout.view, 1.0f);
    EXPECT_EQ(kernels.allocations, 2) << layers << " layers";
    EXPECT_EQ(values(din.view), std::vector<float>(size_t(dout.view.numel()), std::ldexp(1.0f, layers)));
  }
}

// With recomputation each segment's recomputed forward and its backward hand buffers on alike.
TEST(ModelChunkBuffers, RecomputedSegmentsGiveTheSameResults) {
  AddOneKernels kernels;
  const ModelSpec m = spec(6);
  ModelChunk chunk(kernels, ChunkLayout{0, 0, 6, false, false}, m, 4, nullptr, m.seq_len);
  const OwnedTensor input = filled(kernels, m, 0.5f), dout = filled(kernels, m, 1.0f);
  const MicroBatch mb;
  const OwnedTensor out = chunk.forward(mb, input.view, MicrobatchTokens{}, Tensor{}, true);
  EXPECT_EQ(values(out.view), std::vector<float>(size_t(input.view.numel()), 6.5f));
  const OwnedTensor din = chunk.backward(mb, dout.view, 1.0f);
  EXPECT_EQ(values(din.view), std::vector<float>(size_t(dout.view.numel()), 64.0f));
}

}  // namespace
}  // namespace ptdp
