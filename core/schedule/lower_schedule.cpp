// The communication policy of instruction_stream.hpp: units of ops, one group after each unit.
#include <algorithm>
#include <climits>
#include <optional>
#include <utility>

#include "schedule/instruction_stream.hpp"
#include "schedule/op_kinds.hpp"
#include "schedule/schedule_shape.hpp"

namespace ptdp {
namespace {

// The transfer that brings `op`'s input to `stage`, if it comes from another stage.
std::optional<Transfer> input_transfer(const ScheduleShape& shape, int stage, const ComputeOp& op) {
  if (op.kind == OpKind::BackwardWeight) return std::nullopt;  // reads what its BackwardInput kept
  const int vs = virtual_stage_of(shape, stage, op.chunk);
  Transfer t;
  t.direction = Transfer::Direction::Recv;
  t.microbatch = op.microbatch;
  if (op.kind == OpKind::Forward) {
    if (vs == 0) return std::nullopt;  // reads the data
    t.payload = Transfer::Payload::Activation;
    t.source_virtual_stage = vs - 1;
  } else {
    if (vs == virtual_stage_count(shape) - 1) return std::nullopt;  // starts from the loss
    t.payload = Transfer::Payload::Gradient;
    t.source_virtual_stage = vs + 1;
  }
  t.peer_stage = stage_of_virtual_stage(shape, t.source_virtual_stage);
  if (t.peer_stage == stage) return std::nullopt;
  return t;
}

// The transfer that takes `op`'s result to the stage that consumes it, if that is another stage.
std::optional<Transfer> output_transfer(const ScheduleShape& shape, int stage, const ComputeOp& op) {
  if (op.kind == OpKind::BackwardWeight) return std::nullopt;  // weight gradients stay on the stage
  const int vs = virtual_stage_of(shape, stage, op.chunk);
  Transfer t;
  t.direction = Transfer::Direction::Send;
  t.microbatch = op.microbatch;
  t.source_virtual_stage = vs;
  if (op.kind == OpKind::Forward) {
    if (vs == virtual_stage_count(shape) - 1) return std::nullopt;  // feeds the loss
    t.payload = Transfer::Payload::Activation;
  } else {
    if (vs == 0) return std::nullopt;  // gradient of the data: nobody needs it
    t.payload = Transfer::Payload::Gradient;
  }
  t.peer_stage = stage_of_virtual_stage(shape, t.target_virtual_stage());
  if (t.peer_stage == stage) return std::nullopt;
  return t;
}

// Every op of every stage with its dependencies: the next op of its stage, and the ops that use
// its result (a Forward feeds the next virtual stage's Forward and its own Backward; a Backward
// feeds the previous virtual stage's Backward). A BackwardInput stands where a Backward would; a
// BackwardWeight feeds nothing and follows its BackwardInput on the same stage. Answers "must op
// a run before op b?".
class OpGraph {
 public:
  OpGraph(const ScheduleShape& shape, const std::vector<std::vector<ComputeOp>>& ops)
      : shape_(shape), first_id_(ops.size() + 1, 0) {
    for (size_t s = 0; s < ops.size(); ++s) first_id_[s + 1] = first_id_[s] + static_cast<int>(ops[s].size());
    const int nodes = first_id_.back();
    by_op_.assign(2 * static_cast<size_t>(shape.microbatches) * virtual_stage_count(shape), -1);
    for (size_t s = 0; s < ops.size(); ++s)
      for (size_t i = 0; i < ops[s].size(); ++i)
        if (ops[s][i].kind != OpKind::BackwardWeight)
          by_op_[op_key(ops[s][i].kind, ops[s][i].microbatch,
                        virtual_stage_of(shape, static_cast<int>(s), ops[s][i].chunk))] = id(static_cast<int>(s), i);
    successors_.resize(nodes);
    for (size_t s = 0; s < ops.size(); ++s) {
      for (size_t i = 0; i < ops[s].size(); ++i) {
        const ComputeOp& op = ops[s][i];
        const int from = id(static_cast<int>(s), i), vs = virtual_stage_of(shape, static_cast<int>(s), op.chunk);
        auto add = [&](int to) { if (to >= 0) successors_[from].push_back(to); };
        if (i + 1 < ops[s].size()) add(from + 1);
        if (op.kind == OpKind::Forward) {
          add(find(OpKind::Backward, op.microbatch, vs));
          if (vs + 1 < virtual_stage_count(shape)) add(find(OpKind::Forward, op.microbatch, vs + 1));
        } else if (computes_input_gradient(op.kind) && vs > 0) {
          add(find(OpKind::Backward, op.microbatch, vs - 1));
        }
      }
    }
    compute_levels();
    visited_.assign(nodes, 0);
  }

  int id(int stage, size_t index) const { return first_id_[stage] + static_cast<int>(index); }

  // The Forward, or the op that computes the input gradient (Backward or BackwardInput).
  int find(OpKind kind, int microbatch, int virtual_stage) const {
    return by_op_[op_key(kind, microbatch, virtual_stage)];
  }

  // True if `to` can only run after `from`; also when a dependency cycle leaves it undecided.
  bool reaches(int from, int to) {
    if (level_[from] == INT_MAX || level_[to] == INT_MAX) return true;
    if (level_[to] <= level_[from]) return false;  // every edge raises the level
    ++stamp_;
    std::vector<int> stack{from};
    visited_[from] = stamp_;
    while (!stack.empty()) {
      const int node = stack.back();
      stack.pop_back();
      for (int next : successors_[node]) {
        if (next == to) return true;
        if (visited_[next] == stamp_ || level_[next] >= level_[to]) continue;
        visited_[next] = stamp_;
        stack.push_back(next);
      }
    }
    return false;
  }

 private:
  size_t op_key(OpKind kind, int microbatch, int virtual_stage) const {
    return (static_cast<size_t>(microbatch) * virtual_stage_count(shape_) + virtual_stage) * 2 +
           (kind == OpKind::Forward ? 0 : 1);
  }

  // Longest path from any source (Kahn's order); nodes on or behind a cycle keep INT_MAX.
  void compute_levels() {
    const size_t nodes = successors_.size();
    std::vector<int> indegree(nodes, 0);
    for (const auto& next : successors_)
      for (int n : next) ++indegree[n];
    level_.assign(nodes, INT_MAX);
    std::vector<int> ready;
    for (size_t n = 0; n < nodes; ++n)
      if (indegree[n] == 0) ready.push_back(static_cast<int>(n));
    std::vector<int> level(nodes, 0);
    for (size_t k = 0; k < ready.size(); ++k) {
      const int node = ready[k];
      level_[node] = level[node];
      for (int next : successors_[node]) {
        level[next] = std::max(level[next], level[node] + 1);
        if (--indegree[next] == 0) ready.push_back(next);
      }
    }
  }

  ScheduleShape shape_;
  std::vector<int> first_id_;
  std::vector<int> by_op_;
  std::vector<std::vector<int>> successors_;
  std::vector<int> level_;
  std::vector<int> visited_;
  int stamp_ = 0;
};

}  // namespace

std::vector<InstructionStream> lower_schedule(const ScheduleShape& shape,
                                              const std::vector<std::vector<ComputeOp>>& ops_per_stage) {
  check_ops_in_range(shape, ops_per_stage);
  const bool pair_units = shape.chunks > 1 && shape.stages > 1;
  std::optional<OpGraph> graph;
  if (pair_units) graph.emplace(shape, ops_per_stage);

  std::vector<InstructionStream> streams(shape.stages);
  for (int stage = 0; stage < shape.stages; ++stage) {
    const auto& ops = ops_per_stage[stage];
    // A pair is refused when the Backward's input is produced, on another stage, by an op that
    // has to wait for the Forward.
    auto pairs = [&](size_t i) {
      if (!pair_units || i + 1 >= ops.size()) return false;
      const ComputeOp& forward = ops[i];
      const ComputeOp& backward = ops[i + 1];
      if (forward.kind != OpKind::Forward || !computes_input_gradient(backward.kind)) return false;
      auto input = input_transfer(shape, stage, backward);
      if (!input) return true;
      const int producer = graph->find(OpKind::Backward, backward.microbatch, input->source_virtual_stage);
      return producer >= 0 && !graph->reaches(graph->id(stage, i), producer);
    };
    std::vector<std::pair<size_t, size_t>> units;  // [begin, end) of ops
    for (size_t i = 0; i < ops.size();) {
      const size_t end = pairs(i) ? i + 2 : i + 1;
      units.emplace_back(i, end);
      i = end;
    }

    InstructionStream& stream = streams[stage];
    auto receive_inputs = [&](const std::pair<size_t, size_t>& unit, Instruction& group) {
      for (size_t j = unit.first; j < unit.second; ++j)
        if (auto t = input_transfer(shape, stage, ops[j])) group.transfers.push_back(*t);
    };
    auto flush = [&](Instruction& group) {
      if (!group.transfers.empty()) stream.push_back(std::move(group));
    };
    // A unit of BackwardWeight ops needs and sends nothing: the group before it already receives
    // the inputs of the unit after it, so that weight gradients never hold back a neighbour
    // waiting to send (its send and this stage's receive stay in the groups 1F1B pairs them in).
    auto weight_only = [&](const std::pair<size_t, size_t>& unit) {
      return std::all_of(ops.begin() + unit.first, ops.begin() + unit.second,
                         [](const ComputeOp& op) { return op.kind == OpKind::BackwardWeight; });
    };
    size_t received = 0;  // units [0, received) have their inputs received
    auto receive_next = [&](size_t from, Instruction& group) {
      while (from < units.size() && weight_only(units[from])) ++from;
      if (from >= units.size() || from < received) return;
      receive_inputs(units[from], group);
      received = from + 1;
    };
    if (!units.empty()) {
      Instruction group{Instruction::Kind::Exchange, {}, {}};
      receive_next(0, group);
      flush(group);
    }
    for (size_t u = 0; u < units.size(); ++u) {
      Instruction group{Instruction::Kind::Exchange, {}, {}};
      for (size_t j = units[u].first; j < units[u].second; ++j) {
        stream.push_back(Instruction{Instruction::Kind::Compute, ops[j], {}});
        if (auto t = output_transfer(shape, stage, ops[j])) group.transfers.push_back(*t);
      }
      receive_next(u + 1, group);
      flush(group);
    }
  }
  return streams;
}

}  // namespace ptdp
