#pragma once
// Runs the instruction streams of all stages against each other under the execution model of
// instruction_stream.hpp: compute takes its time, a group waits until every transfer in it is
// matched by the peer's posted group, transfers between two stages match in posting order. The
// verifier replays to find deadlocks and mismatched transfers; the simulator replays with op
// times to get timelines. Whether the streams finish does not depend on the times.
//
// With ReplayTiming::posted_ahead a group does not hold its stage: its sends and receives are
// posted when the stage reaches it and the stage goes on, and a compute op waits only for the
// receive of its own input (as with asynchronous isend/irecv posted one op ahead). That is the
// model the zero-bubble paper's bubble formulas assume: under blocking groups a stage that runs a
// BackwardWeight holds back the neighbour that sends to it, and the weight gradients cannot fill
// the bubble. The executor's transfer lane (pipeline_executor.hpp) runs each stage's groups one
// after another beside its compute. Replayed that way (tried while writing the executor, not kept
// here), ZB-H1 had this model's bubble at p 4, m 8 and p 8, m 32 (T_W 0.8 and 1), but ZB-H2, whose
// receives must complete apart from the sends queued before them, kept most of its blocking
// bubble (1.08 against 1.25 blocking at p 4, m 8, T_F = T_B = T_W). The verifier always replays
// blocking groups: the executor's waits, posted ahead or not, are among theirs, so streams that
// finish under blocking groups finish under the executor.
#include <cstddef>
#include <string>
#include <vector>

#include "schedule/instruction_stream.hpp"

namespace ptdp {

struct ReplayTiming {
  double forward = 1.0;           // one Forward through one chunk
  double backward = 1.0;          // one whole Backward through one chunk
  double weight = 0.5;            // the part of it a split backward's BackwardWeight takes
  double transfer_latency = 0.0;  // from the later of the two posts to the transfer's completion
  bool posted_ahead = false;      // groups do not block; compute waits for its own input only
};

struct TimedOp {
  ComputeOp op;
  double start = 0.0;
  double end = 0.0;
};

struct StreamReplay {
  std::vector<std::vector<TimedOp>> timelines;  // per stage, the compute ops that ran
  std::vector<double> finish;                   // per stage, when its last instruction completed
  // Per stage, the first instruction that did not complete (the stream's size when it finished)
  // and, if that is an exchange, its transfers that were never matched.
  std::vector<size_t> stopped_at;
  std::vector<std::vector<Transfer>> unmatched;
  bool completed() const;
};

// Throws ScheduleError when the k-th send from one stage to another and the k-th receive there
// describe different buffers, or a transfer names a peer outside the pipeline.
StreamReplay replay_streams(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                            const ReplayTiming& timing);

// "F3.1" for a compute instruction, "the exchange after F3.1" (or "before the first op") for a
// group; used in every message that points into a stream.
std::string instruction_position(const InstructionStream& stream, size_t index, int chunks);

// One line naming every stage a replay left waiting, where it waits and for which transfers.
std::string deadlock_description(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                                 const StreamReplay& replay);

}  // namespace ptdp
