#pragma once
// Runs one rank's instruction stream for a step: the compute ops of its model chunks and the
// grouped point-to-point transfers between pipeline neighbours, with the optional
// scatter/gather transfer (each TP rank moves 1/t of the activation; the receiver all-gathers
// over its TP group right before the op that reads it). Under sequence parallelism each TP rank
// already holds only its 1/t of the activation (its rows of the sequence) and sends it as it is,
// scatter/gather or not.
//
// Transfers posted ahead. With a transfer lane (comm_lane.hpp, the pipeline group on a thread of
// its own) each exchange of the stream is handed to the lane, which runs the groups one after
// another exactly as a blocking executor would; the computing thread goes on and waits only
// where an op reads a buffer that a group receives. A BackwardWeight, which reads nothing from
// another stage, then runs while its stage waits for an activation or a gradient: the
// posted-ahead model of stream_replay.hpp, under which a zero-bubble schedule fills the bubble.
// It cannot deadlock where the blocking executor does not: every wait it keeps is one the
// blocking executor keeps too (a group after the ops before it and after the group before it,
// an op after the group that brings its input), it only drops the wait of an op for groups that
// bring it nothing. On a GPU the lane enqueues on the kernels' transfer stream (ABI 1.10), ordered
// against the compute stream by the kernels' events: a group after the compute posted before it,
// the compute that reads a receive (or reuses a sent buffer's memory) after the group. Without a
// lane (p = 1, or a kernels plugin of an older ABI on a GPU, whose transfers go on the compute
// stream) each group blocks the computing thread, as before.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/comm_lane.hpp"
#include "runtime/model_chunk.hpp"
#include "runtime/step_context.hpp"
#include "runtime/topology.hpp"
#include "schedule/instruction_stream.hpp"

namespace ptdp {

class PipelineExecutor {
 public:
  PipelineExecutor(LayerKernels& kernels, const ParallelGroups& groups, const Topology& topology,
                   int microbatches, bool scatter_gather,
                   std::vector<std::unique_ptr<ModelChunk>>& chunks_on_rank, const ModelSpec& model,
                   int64_t samples_per_replica, bool mark_first_gradient, bool split_backward = false);

  // Called with (chunk, layer) right after that layer's last backward of the step, when its
  // gradients are final (layers numbered as ModelChunk::parameter_layers numbers them). Under a
  // split backward that is the chunk's last BackwardWeight: every BackwardInput precedes it.
  void on_gradients_final(std::function<void(int chunk, int layer)> fn) { gradients_final_ = std::move(fn); }
  // Posts the exchanges on `lane` (its group: this rank's pipeline group) instead of blocking.
  void post_transfers_on(CommLane* lane) { lane_ = lane; }
  // Called with (chunk, layer) right before each forward of that layer.
  void on_layer_starting(std::function<void(int chunk, int layer)> fn) { layer_starting_ = std::move(fn); }

  // Runs the step's stream; each microbatch of the first and the last stage reads its tokens from
  // the step's batches.
  void run(const StepContext& step);

 private:
  using BufferKey = std::tuple<int, int, int>;  // (payload, microbatch, producing virtual stage)
  // The one place that says which global samples a microbatch holds: each data-parallel
  // replica takes a contiguous share of the global batch, cut into microbatches in slot order.
  MicroBatch microbatch(int64_t step, int slot) const;
  // Posts one group of sends and receives (or runs it, without a lane).
  void exchange(const Instruction& instruction, TimelineRecorder& timeline);
  // Waits for the group posted last and lets go of the buffers it sent.
  void settle_last_group(TimelineRecorder& timeline);
  // Makes ready the buffer `op` reads from another stage, if any: waits for the group that brings
  // it and, under scatter/gather, all-gathers it over the tensor group.
  void take_delivery(const ComputeOp& op, TimelineRecorder& timeline);
  void compute(const ComputeOp& op, const StepContext& step);
  int peer_rank(int peer_stage) const;
  int tag(const Transfer& t) const;

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  const Topology& topology_;
  GridPosition me_;
  int microbatches_;
  bool scatter_gather_;
  std::vector<std::unique_ptr<ModelChunk>>& model_chunks_;
  ModelSpec model_;
  int64_t samples_per_replica_;
  bool mark_first_gradient_;  // sets MicroBatch::first_gradient on each chunk's first backward
  bool split_backward_;       // the blocks' weight gradients come in BackwardWeight, not BackwardInput
  std::function<void(int, int)> gradients_final_;
  std::function<void(int, int)> layer_starting_;
  std::vector<int> backwards_left_;         // per chunk, this step: ops that add weight gradients
  std::vector<bool> gradients_written_;     // per chunk, this step: the blocks' gradients hold a share
  std::map<BufferKey, OwnedTensor> buffers_;           // inputs at hand and outputs to send
  // A buffer a posted group receives: the group's ticket on the lane (0 without one) and what it
  // receives into, all of it or, under scatter/gather, this rank's 1/t.
  struct Arriving {
    uint64_t group = 0;
    OwnedTensor buffer;
    bool part = false;
  };
  std::map<BufferKey, Arriving> arriving_;
  CommLane* lane_ = nullptr;
  uint64_t last_group_ = 0;          // the ticket of the group posted last
  std::vector<OwnedTensor> sending_;  // what that group sends: kept until it has run
  std::map<int, std::pair<OwnedTensor, OwnedTensor>> tokens_;  // slot -> (tokens, targets) on host
};

}  // namespace ptdp
