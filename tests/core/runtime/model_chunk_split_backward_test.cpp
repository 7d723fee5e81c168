// A model chunk's backward in a zero-bubble schedule's two parts: which of a block's calls each
// part makes, with kernels that split the backward and with kernels that do not, and when the
// layers' gradients are final (the hook the data-parallel buckets are reduced from).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/model_chunk.hpp"
#include "support/host_memory_kernels.hpp"

namespace ptdp {
namespace {

// Writes each call it gets into a shared log as "<call><layer>"; din = 2·dout in both backwards.
class LoggingBlock final : public TransformerBlock {
 public:
  LoggingBlock(int layer, std::vector<std::string>& log) : layer_(layer), log_(log) {}
  std::vector<ParamRef> parameters() override { return {}; }
  void forward(const MicroBatch&, const Tensor& in, Tensor out, bool) override {
    for (int64_t i = 0; i < in.numel(); ++i) out.as<float>()[i] = in.as<float>()[i];
  }
  void backward(const MicroBatch&, const Tensor& dout, Tensor din) override {
    log_.push_back("backward" + std::to_string(layer_));
    double_into(dout, din);
  }
  void backward_input(const MicroBatch&, const Tensor& dout, Tensor din) override {
    log_.push_back("input" + std::to_string(layer_));
    double_into(dout, din);
  }
  void backward_weight(const MicroBatch&) override { log_.push_back("weight" + std::to_string(layer_)); }
  void release(int) override {}

 private:
  static void double_into(const Tensor& dout, Tensor din) {
    for (int64_t i = 0; i < dout.numel(); ++i) din.as<float>()[i] = 2.0f * dout.as<float>()[i];
  }
  int layer_;
  std::vector<std::string>& log_;
};

class LoggingKernels final : public test::HostMemoryKernels {
 public:
  std::shared_ptr<TransformerBlock> make_block(int layer) override {
    return std::make_shared<LoggingBlock>(layer, log);
  }
  std::vector<std::string> log;
};

struct SplitRun {
  std::vector<std::string> log;  // the blocks' calls and "final<layer>" from layer_done, in order
  std::vector<float> din;
};

// Forward, backward_input, then backward_weight of three blocks, on kernels that split or not.
SplitRun split_backward(bool kernels_split) {
  LoggingKernels kernels;
  ModelSpec m;
  m.layers = 3;
  m.seq_len = 2;
  m.micro_batch = 1;
  m.hidden = 2;
  ModelChunk chunk(kernels, ChunkLayout{0, 0, 3, false, false}, m, 0, nullptr, m.seq_len, kernels_split);
  OwnedTensor input = kernels.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  OwnedTensor dout = kernels.allocate({m.seq_len, m.micro_batch, m.hidden}, DType::F32);
  for (int64_t i = 0; i < dout.view.numel(); ++i) dout.view.as<float>()[i] = 1.0f;
  const MicroBatch mb;
  chunk.forward(mb, input.view, MicrobatchTokens{}, Tensor{}, true);
  const OwnedTensor din = chunk.backward_input(mb, dout.view, 1.0f);
  kernels.log.push_back("|");  // where backward_weight starts
  chunk.backward_weight(mb, [&](int layer) { kernels.log.push_back("final" + std::to_string(layer)); });
  return {kernels.log, {din.view.as<float>(), din.view.as<float>() + din.view.numel()}};
}

TEST(ModelChunkSplitBackward, SplittingKernelsComputeTheInputGradientFirstAndTheWeightsLater) {
  const SplitRun run = split_backward(true);
  EXPECT_EQ(run.log, (std::vector<std::string>{"input2", "input1", "input0", "|", "weight2", "final2", "weight1",
                                               "final1", "weight0", "final0"}));
  EXPECT_EQ(run.din, std::vector<float>(4, 8.0f));  // three doublings of 1
}

// The whole backward at the BackwardInput, nothing of the blocks at the BackwardWeight, which
// still marks the gradients final: the schedule's order runs, with 1F1B's work in each op.
TEST(ModelChunkSplitBackward, KernelsThatDoNotSplitRunTheWholeBackwardFirst) {
  const SplitRun run = split_backward(false);
  EXPECT_EQ(run.log, (std::vector<std::string>{"backward2", "backward1", "backward0", "|", "final2", "final1",
                                               "final0"}));
  EXPECT_EQ(run.din, std::vector<float>(4, 8.0f));  // three doublings of 1
}

}  // namespace
}  // namespace ptdp
