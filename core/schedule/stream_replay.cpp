#include "schedule/stream_replay.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "schedule/op_kinds.hpp"
#include "schedule/op_label.hpp"
#include "schedule/schedule_error.hpp"
#include "schedule/schedule_shape.hpp"

namespace ptdp {
namespace {

struct Post {
  Transfer transfer;
  double time;
  int stage;
  size_t instruction;
};

// Posted sends and receives between one ordered pair of stages (from -> to).
struct Channel {
  std::vector<Post> sends;
  std::vector<Post> recvs;
};

std::string ordinal(size_t k) {
  const size_t n = k + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                     ? "st"
                       : n % 10 == 2                     ? "nd"
                       : n % 10 == 3                     ? "rd"
                                                         : "th";
  return std::to_string(n) + suffix;
}

// The buffer a transfer carries, and the one a compute op reads from another virtual stage.
std::tuple<int, int, int> buffer_key(const Transfer& t) {
  return {static_cast<int>(t.payload), t.microbatch, t.source_virtual_stage};
}
std::tuple<int, int, int> input_key(const ComputeOp& op, int virtual_stage) {
  if (op.kind == OpKind::Forward) return {static_cast<int>(Transfer::Payload::Activation), op.microbatch, virtual_stage - 1};
  return {static_cast<int>(Transfer::Payload::Gradient), op.microbatch, virtual_stage + 1};
}

}  // namespace

bool StreamReplay::completed() const {
  for (size_t s = 0; s < unmatched.size(); ++s)
    if (!unmatched[s].empty()) return false;
  return true;
}

std::string instruction_position(const InstructionStream& stream, size_t index, int chunks) {
  if (index < stream.size() && stream[index].kind == Instruction::Kind::Compute)
    return op_label(stream[index].op, chunks);
  for (size_t i = std::min(index, stream.size()); i-- > 0;)
    if (stream[i].kind == Instruction::Kind::Compute)
      return "the exchange after " + op_label(stream[i].op, chunks);
  return "the exchange before the first op";
}

StreamReplay replay_streams(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                            const ReplayTiming& timing) {
  const int p = static_cast<int>(streams.size());
  std::vector<Channel> channels(static_cast<size_t>(p) * p);
  auto channel = [&](int from, int to) -> Channel& { return channels[static_cast<size_t>(from) * p + to]; };

  StreamReplay replay;
  replay.timelines.resize(p);
  replay.finish.assign(p, 0.0);
  replay.stopped_at.assign(p, 0);
  replay.unmatched.resize(p);

  struct Pending {
    bool send;
    Channel* channel;
    size_t index;
  };
  std::vector<std::vector<Pending>> pending(p);
  // Posted ahead: per stage, its posted receives by (payload, microbatch, source virtual stage).
  std::vector<std::map<std::tuple<int, int, int>, Pending>> inputs(p);
  std::vector<bool> posted(p, false);
  std::vector<double>& clock = replay.finish;

  auto check_pair = [&](const Post& send, const Post& recv, size_t k) {
    if (send.transfer.same_buffer(recv.transfer)) return;
    throw ScheduleError(
        "stage " + std::to_string(recv.stage) + ", " +
        instruction_position(streams[recv.stage], recv.instruction, shape.chunks) + ": its " + ordinal(k) +
        " receive from stage " + std::to_string(send.stage) + " expects the " + buffer_label(recv.transfer) +
        ", but stage " + std::to_string(send.stage) + "'s " + ordinal(k) + " send to it (" +
        instruction_position(streams[send.stage], send.instruction, shape.chunks) + ") is the " +
        buffer_label(send.transfer) + "; transfers between two stages match in posting order");
  };

  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < p; ++s) {
      const InstructionStream& stream = streams[s];
      size_t& pc = replay.stopped_at[s];
      while (pc < stream.size()) {
        const Instruction& ins = stream[pc];
        if (ins.kind == Instruction::Kind::Compute) {
          double start = clock[s];
          if (timing.posted_ahead && ins.op.kind != OpKind::BackwardWeight) {
            auto input = inputs[s].find(input_key(ins.op, virtual_stage_of(shape, s, ins.op.chunk)));
            if (input != inputs[s].end()) {
              const Pending& recv = input->second;
              if (recv.index >= recv.channel->sends.size()) break;  // its sender has not posted yet
              start = std::max(start, std::max(recv.channel->sends[recv.index].time,
                                               recv.channel->recvs[recv.index].time) +
                                          timing.transfer_latency);
              inputs[s].erase(input);
            }
          }
          const double duration = ins.op.kind == OpKind::Forward          ? timing.forward
                                  : ins.op.kind == OpKind::Backward       ? timing.backward
                                  : ins.op.kind == OpKind::BackwardWeight ? timing.weight
                                                                          : timing.backward - timing.weight;
          replay.timelines[s].push_back(TimedOp{ins.op, start, start + duration});
          clock[s] = start + duration;
          ++pc;
          progress = true;
          continue;
        }
        if (!posted[s]) {
          for (const Transfer& t : ins.transfers) {
            if (t.peer_stage < 0 || t.peer_stage >= p || t.peer_stage == s)
              throw ScheduleError("stage " + std::to_string(s) + ", " +
                                  instruction_position(stream, pc, shape.chunks) + ": transfer of the " +
                                  buffer_label(t) + " names peer stage " + std::to_string(t.peer_stage) +
                                  ", not another stage of 0.." + std::to_string(p - 1));
            const bool send = t.direction == Transfer::Direction::Send;
            Channel& ch = send ? channel(s, t.peer_stage) : channel(t.peer_stage, s);
            auto& mine = send ? ch.sends : ch.recvs;
            const auto& theirs = send ? ch.recvs : ch.sends;
            mine.push_back(Post{t, clock[s], s, pc});
            const size_t k = mine.size() - 1;
            if (k < theirs.size()) send ? check_pair(mine[k], theirs[k], k) : check_pair(theirs[k], mine[k], k);
            if (!timing.posted_ahead)
              pending[s].push_back(Pending{send, &ch, k});
            else if (!send)
              inputs[s][buffer_key(t)] = Pending{false, &ch, k};
          }
          posted[s] = true;
          progress = true;
        }
        if (timing.posted_ahead) {  // nothing to wait for here: the ops that read the inputs wait
          posted[s] = false;
          ++pc;
          continue;
        }
        double done = clock[s];
        bool matched = true;
        for (const Pending& w : pending[s]) {
          const auto& mine = w.send ? w.channel->sends : w.channel->recvs;
          const auto& theirs = w.send ? w.channel->recvs : w.channel->sends;
          if (w.index >= theirs.size()) {
            matched = false;
            break;
          }
          done = std::max(done, std::max(mine[w.index].time, theirs[w.index].time) + timing.transfer_latency);
        }
        if (!matched) break;
        clock[s] = done;
        pending[s].clear();
        posted[s] = false;
        ++pc;
        progress = true;
      }
    }
  }

  // Posted ahead, a stage waits in the op whose input never came: every post without its match
  // is unmatched, the receives of the stage that waits for them among them.
  if (timing.posted_ahead)
    for (int from = 0; from < p; ++from)
      for (int to = 0; to < p; ++to) {
        const Channel& ch = channel(from, to);
        for (size_t k = ch.recvs.size(); k < ch.sends.size(); ++k) replay.unmatched[from].push_back(ch.sends[k].transfer);
        for (size_t k = ch.sends.size(); k < ch.recvs.size(); ++k) replay.unmatched[to].push_back(ch.recvs[k].transfer);
      }
  for (int s = 0; s < p; ++s)
    for (const Pending& w : pending[s]) {
      const auto& mine = w.send ? w.channel->sends : w.channel->recvs;
      const auto& theirs = w.send ? w.channel->recvs : w.channel->sends;
      if (w.index >= theirs.size()) replay.unmatched[s].push_back(mine[w.index].transfer);
    }
  return replay;
}

std::string deadlock_description(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                                 const StreamReplay& replay) {
  std::string message = "the streams deadlock under blocking grouped send/recv:";
  bool first = true;
  for (size_t s = 0; s < streams.size(); ++s) {
    if (replay.unmatched[s].empty()) continue;
    message += first ? " " : "; ";
    first = false;
    message += "stage " + std::to_string(s) + " waits in " +
               instruction_position(streams[s], replay.stopped_at[s], shape.chunks) + " for ";
    for (size_t k = 0; k < replay.unmatched[s].size(); ++k) {
      const Transfer& t = replay.unmatched[s][k];
      if (k) message += " and ";
      message += t.direction == Transfer::Direction::Send
                     ? "stage " + std::to_string(t.peer_stage) + " to receive the " + buffer_label(t)
                     : "stage " + std::to_string(t.peer_stage) + " to send the " + buffer_label(t);
    }
  }
  return message;
}

}  // namespace ptdp
