#include "runtime/pipeline_executor.hpp"

#include <fmt/format.h>

#include "schedule/op_kinds.hpp"
#include "schedule/op_label.hpp"

namespace ptdp {

namespace {
OwnedTensor host_i32(int64_t rows, int64_t cols) {
  auto storage = std::shared_ptr<int32_t[]>(new int32_t[static_cast<size_t>(rows * cols)]());
  OwnedTensor t;
  t.view.data = storage.get();
  t.view.dtype = DType::I32;
  t.view.shape = {rows, cols};
  t.storage = storage;
  return t;
}
}  // namespace

PipelineExecutor::PipelineExecutor(LayerKernels& kernels, const ParallelGroups& groups, const Topology& topology,
                                   int microbatches, bool scatter_gather,
                                   std::vector<std::unique_ptr<ModelChunk>>& chunks_on_rank,
                                   const ModelSpec& model, int64_t samples_per_replica, bool mark_first_gradient,
                                   bool split_backward)
    : kernels_(kernels),
      groups_(groups),
      topology_(topology),
      me_(topology.position_of(groups.world->rank())),
      microbatches_(microbatches),
      // A sequence-parallel activation is already this rank's 1/t.
      scatter_gather_(scatter_gather && topology.tensor() > 1 &&
                      chunks_on_rank.front()->activation_shape().front() == model.seq_len),
      model_chunks_(chunks_on_rank),
      model_(model),
      samples_per_replica_(samples_per_replica),
      mark_first_gradient_(mark_first_gradient),
      split_backward_(split_backward) {}

MicroBatch PipelineExecutor::microbatch(int64_t step, int slot) const {
  MicroBatch mb;
  mb.slot = slot;
  mb.step = step;
  mb.first_sample = me_.dp * samples_per_replica_ + static_cast<int64_t>(slot) * model_.micro_batch;
  return mb;
}

int PipelineExecutor::tag(const Transfer& t) const {
  // Unique per (payload, microbatch, producing virtual stage) within a step.
  return (t.source_virtual_stage * microbatches_ + t.microbatch) * 2 + (t.payload == Transfer::Payload::Gradient ? 1 : 0);
}

void PipelineExecutor::settle_last_group(TimelineRecorder& timeline) {
  if (lane_) {
    if (!lane_->ran(last_group_)) timeline.span("wait for send/recv", "p2p", [&] { lane_->wait(last_group_); });
    // On a GPU the sends may still be reading on the transfer stream: compute that reuses
    // their memory once it is released below queues behind them.
    kernels_.compute_waits_for_transfer();
  }
  sending_.clear();
}

void PipelineExecutor::exchange(const Instruction& instruction, TimelineRecorder& timeline) {
  // At most one group in flight: the ops between two groups run while the first is posted (a
  // zero-bubble stage's weight gradients among them), and the next group is posted once it has
  // run. Posting further ahead would keep more outputs waiting to be sent alive (and, in a
  // schedule of many forwards in a row, one per forward), for no op that could start sooner: the
  // receives of a group are the inputs of the unit right after it (instruction_stream.hpp).
  settle_last_group(timeline);
  const int t = topology_.tensor();
  const std::vector<int64_t> shape = model_chunks_.front()->activation_shape();
  const int64_t n = shape[0] * shape[1] * shape[2];
  struct Post {
    bool send;
    Tensor buffer;
    int peer, tag;
    // The group holds what it moves: should this rank fail mid-step and the executor go, a group
    // still running on the lane does not move memory that is gone.
    std::shared_ptr<void> storage;
  };
  std::vector<Post> posts;
  std::vector<BufferKey> received;
  for (const Transfer& tr : instruction.transfers) {
    const BufferKey key{static_cast<int>(tr.payload), tr.microbatch, tr.source_virtual_stage};
    if (tr.direction == Transfer::Direction::Send) {
      auto found = buffers_.find(key);
      PTDP_CHECK(found != buffers_.end(),
                 fmt::format("stage {}: nothing to send for microbatch {} of virtual stage {}", me_.pp,
                             tr.microbatch, tr.source_virtual_stage));
      const Tensor& full = found->second.view;
      posts.push_back({true, scatter_gather_ ? full.flat_slice(me_.tp * (n / t), n / t) : full, tr.peer_stage, tag(tr),
                       found->second.storage});
      sending_.push_back(std::move(found->second));
      buffers_.erase(found);
    } else {
      Arriving& arriving = arriving_[key];
      arriving.part = scatter_gather_;
      arriving.buffer = scatter_gather_ ? kernels_.allocate({n / t}, kernels_.activation_dtype())
                                        : kernels_.allocate(shape, kernels_.activation_dtype());
      posts.push_back({false, arriving.buffer.view, tr.peer_stage, tag(tr), arriving.buffer.storage});
      received.push_back(key);
    }
  }
  Communicator& pipe = lane_ ? lane_->group() : *groups_.pipeline;  // pipeline group ranks are stage indices
  auto group = [&pipe, posts = std::move(posts)] {
    pipe.group_start();
    for (const Post& post : posts)
      post.send ? pipe.send(post.buffer, post.peer, post.tag) : pipe.recv(post.buffer, post.peer, post.tag);
    pipe.group_end();
  };
  if (!lane_) return timeline.span("send/recv", "p2p", group);
  // On a GPU the group runs on the transfer stream: after the compute that wrote what it sends,
  // and after the compute that last used the memory its receives land in.
  kernels_.transfer_waits_for_compute();
  last_group_ = lane_->post([&timeline, group = std::move(group)] {
    timeline.lane_span("send/recv", "p2p", group, TimelineTrack::TransferLane);
  });
  for (const BufferKey& key : received) arriving_[key].group = last_group_;
}

void PipelineExecutor::take_delivery(const ComputeOp& op, TimelineRecorder& timeline) {
  if (op.kind == OpKind::BackwardWeight) return;  // reads what its BackwardInput kept
  const int vs = model_chunks_.at(op.chunk)->layout().virtual_stage;
  const BufferKey key = op.kind == OpKind::Forward
                            ? BufferKey{static_cast<int>(Transfer::Payload::Activation), op.microbatch, vs - 1}
                            : BufferKey{static_cast<int>(Transfer::Payload::Gradient), op.microbatch, vs + 1};
  auto arriving = arriving_.find(key);
  if (arriving == arriving_.end()) return;  // kept on this stage, or the data or the loss
  Arriving& a = arriving->second;
  if (lane_) {
    if (!lane_->ran(a.group)) timeline.span("wait for send/recv", "p2p", [&] { lane_->wait(a.group); });
    kernels_.compute_waits_for_transfer();  // on a GPU, the receive has landed before compute reads it
  }
  if (a.part)
    timeline.span("scatter/gather all-gather", "p2p", [&] {
      OwnedTensor full = kernels_.allocate(model_chunks_.front()->activation_shape(), kernels_.activation_dtype());
      groups_.tensor->all_gather(a.buffer.view, full.view.flat_slice(0, full.view.numel()));
      a.buffer = std::move(full);
    });
  buffers_[key] = std::move(a.buffer);
  arriving_.erase(arriving);
}

void PipelineExecutor::compute(const ComputeOp& op, const StepContext& step) {
  ModelChunk& chunk = *model_chunks_.at(op.chunk);
  const ChunkLayout& layout = chunk.layout();
  const int vs = layout.virtual_stage;
  MicroBatch mb = microbatch(step.step, op.microbatch);
  mb.training = step.training;
  constexpr int kActivation = static_cast<int>(Transfer::Payload::Activation);
  constexpr int kGradient = static_cast<int>(Transfer::Payload::Gradient);

  if (op.kind == OpKind::Forward) {
    MicrobatchTokens batch;
    if (layout.has_embedding || layout.has_head) {
      auto found = tokens_.find(op.microbatch);
      if (found == tokens_.end()) {
        auto tokens = host_i32(model_.seq_len, model_.micro_batch);
        auto targets = host_i32(model_.seq_len, model_.micro_batch);
        step.batches.microbatch(step.step, mb.first_sample, model_.micro_batch, tokens.view.as<int32_t>(),
                                targets.view.as<int32_t>());
        found = tokens_.emplace(op.microbatch, std::make_pair(std::move(tokens), std::move(targets))).first;
      }
      batch.tokens = &found->second.first.view;
      batch.targets = &found->second.second.view;
    }
    Tensor input;
    BufferKey input_key{kActivation, op.microbatch, vs - 1};
    if (!layout.has_embedding) {
      auto found = buffers_.find(input_key);
      PTDP_CHECK(found != buffers_.end(),
                 fmt::format("stage {}: forward of microbatch {} on virtual stage {} has no input", me_.pp,
                             op.microbatch, vs));
      input = found->second.view;
    }
    Tensor loss = layout.has_head ? step.losses.flat_slice(op.microbatch, 1) : Tensor{};
    std::function<void(int)> layer_starting;
    if (layer_starting_) layer_starting = [&](int layer) { layer_starting_(op.chunk, layer); };
    OwnedTensor out = chunk.forward(mb, input, batch, loss, step.training, layer_starting);
    if (!layout.has_embedding) buffers_.erase(input_key);
    if (!layout.has_head) buffers_[{kActivation, op.microbatch, vs}] = std::move(out);
    return;
  }
  // The op that adds this microbatch's share to the blocks' gradients: a whole Backward, or under
  // a split backward its BackwardWeight, or where the kernels do not split it its BackwardInput
  // (which runs the whole backward). The chunk's first such op of the step writes them.
  const bool writes_block_gradients =
      op.kind == OpKind::Backward || (op.kind == OpKind::BackwardWeight) == split_backward_;
  if (writes_block_gradients) {
    mb.first_gradient = mark_first_gradient_ && !gradients_written_.at(op.chunk);
    gradients_written_.at(op.chunk) = true;
  }
  std::function<void(int)> layer_done;
  if (computes_weight_gradient(op.kind) && --backwards_left_.at(op.chunk) == 0 && gradients_final_)
    layer_done = [&](int layer) { gradients_final_(op.chunk, layer); };
  if (op.kind == OpKind::BackwardWeight) return chunk.backward_weight(mb, layer_done);

  Tensor doutput;
  BufferKey grad_key{kGradient, op.microbatch, vs + 1};
  if (!layout.has_head) {
    auto found = buffers_.find(grad_key);
    PTDP_CHECK(found != buffers_.end(),
               fmt::format("stage {}: backward of microbatch {} on virtual stage {} has no output gradient", me_.pp,
                           op.microbatch, vs));
    doutput = found->second.view;
  }
  OwnedTensor dinput = op.kind == OpKind::Backward ? chunk.backward(mb, doutput, step.loss_scale, layer_done)
                                                   : chunk.backward_input(mb, doutput, step.loss_scale);
  if (!layout.has_head) buffers_.erase(grad_key);
  if (!layout.has_embedding) buffers_[{kGradient, op.microbatch, vs}] = std::move(dinput);
}

void PipelineExecutor::run(const StepContext& step) {
  buffers_.clear();
  arriving_.clear();
  tokens_.clear();
  backwards_left_.assign(model_chunks_.size(), microbatches_);
  gradients_written_.assign(model_chunks_.size(), false);
  for (const Instruction& ins : step.stream) {
    if (ins.kind == Instruction::Kind::Exchange) {
      exchange(ins, step.timeline);
    } else {
      take_delivery(ins.op, step.timeline);  // outside the op's span: a wait is not the op's time
      const std::string name = op_label(ins.op, 2);  // always with the chunk: "F3.0"
      step.timeline.span(name, op_kind_category(ins.op.kind), [&] { compute(ins.op, step); });
    }
  }
  settle_last_group(step.timeline);
  PTDP_CHECK(buffers_.empty() && arriving_.empty(),
             fmt::format("stage {}: the step left {} transfer buffers unused", me_.pp, buffers_.size() + arriving_.size()));
}

}  // namespace ptdp
