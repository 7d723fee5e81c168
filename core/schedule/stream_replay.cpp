#include "schedule/stream_replay.hpp"

#include <algorithm>
#include <string>

#include "schedule/op_label.hpp"
#include "schedule/schedule_error.hpp"

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
          const double duration = ins.op.kind == OpKind::Forward          ? timing.forward
                                  : ins.op.kind == OpKind::Backward       ? timing.backward
                                  : ins.op.kind == OpKind::BackwardWeight ? timing.weight
                                                                          : timing.backward - timing.weight;
          replay.timelines[s].push_back(TimedOp{ins.op, clock[s], clock[s] + duration});
          clock[s] += duration;
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
            pending[s].push_back(Pending{send, &ch, k});
          }
          posted[s] = true;
          progress = true;
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
