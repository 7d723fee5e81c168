#include "schedule/forward_only_schedule.hpp"

#include <string>

#include "schedule/schedule_error.hpp"
#include "schedule/schedule_shape.hpp"
#include "schedule/stream_replay.hpp"

namespace ptdp {

InstructionStream forward_only_stream(const ScheduleShape& shape, int stage) {
  const int stages = shape.stages;
  const int last = virtual_stage_count(shape) - 1;
  InstructionStream stream;
  for (int mb = 0; mb < shape.microbatches; ++mb) {
    for (int c = 0; c < shape.chunks; ++c) {
      const int vs = virtual_stage_of(shape, stage, c);
      const int prev_stage = (vs - 1 + stages) % stages, next_stage = (vs + 1) % stages;
      if (vs > 0 && prev_stage != stage) {
        Instruction recv;
        recv.kind = Instruction::Kind::Exchange;
        recv.transfers.push_back({Transfer::Direction::Recv, Transfer::Payload::Activation, mb, vs - 1, prev_stage});
        stream.push_back(recv);
      }
      Instruction fwd;
      fwd.kind = Instruction::Kind::Compute;
      fwd.op = {OpKind::Forward, mb, c};
      stream.push_back(fwd);
      if (vs < last && next_stage != stage) {
        Instruction send;
        send.kind = Instruction::Kind::Exchange;
        send.transfers.push_back({Transfer::Direction::Send, Transfer::Payload::Activation, mb, vs, next_stage});
        stream.push_back(send);
      }
    }
  }
  return stream;
}

std::vector<InstructionStream> verified_forward_only_streams(const ScheduleShape& shape) {
  check_schedule_shape(shape);
  std::vector<InstructionStream> streams;
  for (int s = 0; s < shape.stages; ++s) streams.push_back(forward_only_stream(shape, s));
  const StreamReplay replay = replay_streams(shape, streams, ReplayTiming{});
  for (int s = 0; s < shape.stages; ++s)
    if (replay.stopped_at[s] != streams[s].size())
      throw ScheduleError("the forward-only schedule for p=" + std::to_string(shape.stages) + " v=" +
                          std::to_string(shape.chunks) + " m=" + std::to_string(shape.microbatches) + ": stage " +
                          std::to_string(s) + " stops at instruction " + std::to_string(replay.stopped_at[s]) + " of " +
                          std::to_string(streams[s].size()));
  return streams;
}

}  // namespace ptdp
