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

void PipelineExecutor::exchange(const Instruction& instruction) {
  Communicator& pipe = *groups_.pipeline;  // pipeline group ranks are stage indices
  const int t = topology_.tensor();
  const std::vector<int64_t> shape = model_chunks_.front()->activation_shape();
  const int64_t n = shape[0] * shape[1] * shape[2];
  struct Gather {
    BufferKey key;
    OwnedTensor part;
  };
  std::vector<Gather> gathers;
  std::vector<BufferKey> sent;
  pipe.group_start();
  for (const Transfer& tr : instruction.transfers) {
    const BufferKey key{static_cast<int>(tr.payload), tr.microbatch, tr.source_virtual_stage};
    if (tr.direction == Transfer::Direction::Send) {
      auto found = buffers_.find(key);
      PTDP_CHECK(found != buffers_.end(),
                 fmt::format("stage {}: nothing to send for microbatch {} of virtual stage {}", me_.pp,
                             tr.microbatch, tr.source_virtual_stage));
      const Tensor& full = found->second.view;
      pipe.send(scatter_gather_ ? full.flat_slice(me_.tp * (n / t), n / t) : full, tr.peer_stage, tag(tr));
      sent.push_back(key);
    } else if (scatter_gather_) {
      OwnedTensor part = kernels_.allocate({n / t}, kernels_.activation_dtype());
      pipe.recv(part.view, tr.peer_stage, tag(tr));
      gathers.push_back({key, std::move(part)});
    } else {
      OwnedTensor full = kernels_.allocate(shape, kernels_.activation_dtype());
      pipe.recv(full.view, tr.peer_stage, tag(tr));
      buffers_[key] = std::move(full);
    }
  }
  pipe.group_end();
  for (auto& g : gathers) {
    OwnedTensor full = kernels_.allocate(shape, kernels_.activation_dtype());
    Tensor flat = full.view.flat_slice(0, n);
    groups_.tensor->all_gather(g.part.view, flat);
    buffers_[g.key] = std::move(full);
  }
  for (const auto& key : sent) buffers_.erase(key);
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
  tokens_.clear();
  backwards_left_.assign(model_chunks_.size(), microbatches_);
  gradients_written_.assign(model_chunks_.size(), false);
  for (const Instruction& ins : step.stream) {
    if (ins.kind == Instruction::Kind::Exchange) {
      step.timeline.span("send/recv", "p2p", [&] { exchange(ins); });
    } else {
      const std::string name = op_label(ins.op, 2);  // always with the chunk: "F3.0"
      step.timeline.span(name, op_kind_category(ins.op.kind), [&] { compute(ins.op, step); });
    }
  }
  PTDP_CHECK(buffers_.empty(), fmt::format("stage {}: the step left {} transfer buffers unused", me_.pp, buffers_.size()));
}

}  // namespace ptdp
