#include "schedule/schedule_verifier.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "schedule/op_kinds.hpp"
#include "schedule/op_label.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_shape.hpp"
#include "schedule/stream_replay.hpp"

namespace ptdp {
namespace {

std::string op_name(const ComputeOp& op) {
  return std::string(op_kind_name(op.kind)) + " of microbatch " +
         std::to_string(op.microbatch) + ", chunk " + std::to_string(op.chunk);
}

std::string at_op(int stage, size_t index, const ComputeOp& op, int chunks) {
  return "stage " + std::to_string(stage) + ", op " + std::to_string(index) + " (" + op_label(op, chunks) + ")";
}

// Which buffers a stage holds, by (payload, microbatch, source virtual stage).
class BufferSet {
 public:
  explicit BufferSet(const ScheduleShape& shape)
      : microbatches_(shape.microbatches),
        virtual_stages_(virtual_stage_count(shape)),
        present_(2 * static_cast<size_t>(microbatches_) * virtual_stages_, false) {}
  bool in_range(const Transfer& t) const {
    return t.microbatch >= 0 && t.microbatch < microbatches_ && t.source_virtual_stage >= 0 &&
           t.source_virtual_stage < virtual_stages_;
  }
  bool has(Transfer::Payload payload, int microbatch, int source) const { return present_[key(payload, microbatch, source)]; }
  void add(Transfer::Payload payload, int microbatch, int source) { present_[key(payload, microbatch, source)] = true; }

 private:
  size_t key(Transfer::Payload payload, int microbatch, int source) const {
    return (static_cast<size_t>(microbatch) * virtual_stages_ + source) * 2 +
           (payload == Transfer::Payload::Gradient ? 1 : 0);
  }
  int microbatches_;
  int virtual_stages_;
  std::vector<bool> present_;
};

void check_stream(const ScheduleShape& shape, int stage, const std::vector<ComputeOp>& ops,
                  const InstructionStream& stream) {
  const int last_vs = virtual_stage_count(shape) - 1;
  const std::string where_stage = "stage " + std::to_string(stage);
  BufferSet made(shape), received(shape), sent(shape);
  size_t next_op = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    const Instruction& ins = stream[i];
    if (ins.kind == Instruction::Kind::Compute) {
      const ComputeOp& op = ins.op;
      if (next_op >= ops.size() || !(op == ops[next_op]))
        throw ScheduleError(where_stage + ", instruction " + std::to_string(i) + ": the stream runs " +
                            op_label(op, shape.chunks) + " where the schedule has " +
                            (next_op < ops.size() ? op_label(ops[next_op], shape.chunks) : std::string("no more ops")));
      if (op.kind == OpKind::BackwardWeight) {  // reads what its BackwardInput kept, sends nothing
        ++next_op;
        continue;
      }
      const int vs = virtual_stage_of(shape, stage, op.chunk);
      const bool forward = op.kind == OpKind::Forward;
      const int source = forward ? vs - 1 : vs + 1;
      const auto payload = forward ? Transfer::Payload::Activation : Transfer::Payload::Gradient;
      const bool needs_input = forward ? vs > 0 : vs < last_vs;
      if (needs_input) {
        const bool local = stage_of_virtual_stage(shape, source) == stage;
        const bool ready = local ? made.has(payload, op.microbatch, source) : received.has(payload, op.microbatch, source);
        if (!ready) {
          Transfer input{Transfer::Direction::Recv, payload, op.microbatch, source, 0};
          throw ScheduleError(at_op(stage, next_op, op, shape.chunks) + ": runs before its input, the " +
                              buffer_label(input) + ", " + (local ? "was computed on this stage" : "was received"));
        }
      }
      made.add(payload, op.microbatch, vs);
      ++next_op;
      continue;
    }
    for (const Transfer& t : ins.transfers) {
      const std::string where = where_stage + ", " + instruction_position(stream, i, shape.chunks) + ": ";
      const bool send = t.direction == Transfer::Direction::Send;
      if (!received.in_range(t) || t.target_virtual_stage() < 0 || t.target_virtual_stage() > last_vs)
        throw ScheduleError(where + "transfer of the " + buffer_label(t) + " is outside the schedule (m = " +
                            std::to_string(shape.microbatches) + ", " + std::to_string(last_vs + 1) +
                            " virtual stages)");
      const int owner = stage_of_virtual_stage(shape, send ? t.source_virtual_stage : t.target_virtual_stage());
      const int peer = stage_of_virtual_stage(shape, send ? t.target_virtual_stage() : t.source_virtual_stage);
      if (owner != stage)
        throw ScheduleError(where + (send ? "sends" : "receives") + " the " + buffer_label(t) +
                            ", which belongs to stage " + std::to_string(owner));
      if (t.peer_stage != peer || peer == stage)
        throw ScheduleError(where + (send ? "sends" : "receives") + " the " + buffer_label(t) +
                            (send ? " to" : " from") + " stage " + std::to_string(t.peer_stage) +
                            (peer == stage ? ", but it stays on this stage" : ", but its peer is stage " + std::to_string(peer)));
      if (send) {
        if (!made.has(t.payload, t.microbatch, t.source_virtual_stage))
          throw ScheduleError(where + "sends the " + buffer_label(t) + " before computing it");
        if (sent.has(t.payload, t.microbatch, t.source_virtual_stage))
          throw ScheduleError(where + "sends the " + buffer_label(t) + " a second time");
        sent.add(t.payload, t.microbatch, t.source_virtual_stage);
      } else {
        if (received.has(t.payload, t.microbatch, t.source_virtual_stage))
          throw ScheduleError(where + "receives the " + buffer_label(t) + " a second time");
        received.add(t.payload, t.microbatch, t.source_virtual_stage);
      }
    }
  }
  if (next_op < ops.size())
    throw ScheduleError(where_stage + ": the stream ends before " + op_label(ops[next_op], shape.chunks) + " (op " +
                        std::to_string(next_op) + " of " + std::to_string(ops.size()) + ")");
  for (const ComputeOp& op : ops) {
    if (op.kind == OpKind::BackwardWeight) continue;
    const int vs = virtual_stage_of(shape, stage, op.chunk);
    const bool forward = op.kind == OpKind::Forward;
    const int target = forward ? vs + 1 : vs - 1;
    if (target < 0 || target > last_vs || stage_of_virtual_stage(shape, target) == stage) continue;
    const auto payload = forward ? Transfer::Payload::Activation : Transfer::Payload::Gradient;
    if (!sent.has(payload, op.microbatch, vs)) {
      Transfer result{Transfer::Direction::Send, payload, op.microbatch, vs, 0};
      throw ScheduleError(where_stage + ": never sends the " + buffer_label(result) + " to stage " +
                          std::to_string(stage_of_virtual_stage(shape, target)));
    }
  }
}

}  // namespace

void check_schedule_ops(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage) {
  check_ops_in_range(shape, ops_per_stage);
  const size_t units = static_cast<size_t>(shape.microbatches) * shape.chunks;
  for (int stage = 0; stage < shape.stages; ++stage) {
    const auto& ops = ops_per_stage[stage];
    // Per (microbatch, chunk), the position of its op of each kind (OpKind's order), or -1.
    std::vector<std::array<long, 4>> at(units, {-1, -1, -1, -1});
    auto position = [&](size_t unit, OpKind kind) -> long& { return at[unit][static_cast<size_t>(kind)]; };
    for (size_t i = 0; i < ops.size(); ++i) {
      const ComputeOp& op = ops[i];
      const size_t unit = static_cast<size_t>(op.microbatch) * shape.chunks + op.chunk;
      const std::string where = at_op(stage, i, op, shape.chunks) + ": ";
      if (position(unit, op.kind) >= 0)
        throw ScheduleError(where + "a second " + op_name(op) + " (the first is op " +
                            std::to_string(position(unit, op.kind)) + ")");
      const OpKind other_backward = op.kind == OpKind::Backward ? OpKind::BackwardInput : OpKind::Backward;
      if (computes_input_gradient(op.kind) && position(unit, other_backward) >= 0)
        throw ScheduleError(where + op_name(op) + " after its " + op_kind_name(other_backward) + " (op " +
                            std::to_string(position(unit, other_backward)) +
                            "): a microbatch's backward runs whole or split into BackwardInput and BackwardWeight, "
                            "not both");
      const OpKind needed = op.kind == OpKind::BackwardWeight ? OpKind::BackwardInput : OpKind::Forward;
      if (op.kind != OpKind::Forward && position(unit, needed) < 0) {
        const ComputeOp before{needed, op.microbatch, op.chunk};
        auto later = std::find(ops.begin() + i, ops.end(), before);
        std::string why = later == ops.end() ? " has no " + std::string(op_kind_name(needed)) + " on this stage"
                                             : " runs before its " + std::string(op_kind_name(needed)) + " (op " +
                                                   std::to_string(later - ops.begin()) + ")";
        if (op.kind == OpKind::BackwardWeight && position(unit, OpKind::Backward) >= 0)
          why += ": its whole Backward (op " + std::to_string(position(unit, OpKind::Backward)) +
                 ") already computed the weight gradients";
        throw ScheduleError(where + op_name(op) + why);
      }
      position(unit, op.kind) = static_cast<long>(i);
    }
    for (size_t unit = 0; unit < units; ++unit) {
      const int microbatch = static_cast<int>(unit / shape.chunks), chunk = static_cast<int>(unit % shape.chunks);
      const std::string where = "stage " + std::to_string(stage) + ": the schedule ";
      if (position(unit, OpKind::Forward) < 0)
        throw ScheduleError(where + "has no " + op_name({OpKind::Forward, microbatch, chunk}));
      const long input = position(unit, OpKind::BackwardInput);
      if (position(unit, OpKind::Backward) < 0 && input < 0)
        throw ScheduleError(where + "has no " + op_name({OpKind::Backward, microbatch, chunk}));
      if (input >= 0 && position(unit, OpKind::BackwardWeight) < 0)
        throw ScheduleError(where + "drops the " + op_name({OpKind::BackwardWeight, microbatch, chunk}) +
                            " (its BackwardInput is op " + std::to_string(input) + ")");
    }
  }
}

std::vector<int> peak_activations(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage) {
  std::vector<int> peaks;
  for (int stage = 0; stage < shape.stages; ++stage) {
    int alive = 0, peak = 0;
    for (const ComputeOp& op : ops_per_stage[stage]) {
      // A split backward's activations (what its BackwardWeight reads) live until the BackwardWeight.
      if (op.kind == OpKind::Forward) ++alive;
      if (computes_weight_gradient(op.kind)) --alive;
      peak = std::max(peak, alive);
    }
    peaks.push_back(peak);
  }
  return peaks;
}

ScheduleReport verify_schedule(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops_per_stage,
                               const std::vector<InstructionStream>& streams) {
  check_schedule_ops(shape, ops_per_stage);
  if (static_cast<int>(streams.size()) != shape.stages)
    throw ScheduleError("there are instruction streams for " + std::to_string(streams.size()) +
                        " stages, expected p = " + std::to_string(shape.stages));
  for (int stage = 0; stage < shape.stages; ++stage) check_stream(shape, stage, ops_per_stage[stage], streams[stage]);
  const StreamReplay replay = replay_streams(shape, streams, ReplayTiming{});
  if (!replay.completed()) throw ScheduleError(deadlock_description(shape, streams, replay));
  return ScheduleReport{peak_activations(shape, ops_per_stage)};
}

}  // namespace ptdp
