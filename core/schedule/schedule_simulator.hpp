#pragma once
// Timelines of a schedule: the verified instruction streams replayed with op times (the
// execution model of instruction_stream.hpp, blocking groups included, or with transfers posted
// ahead), and the pipeline bubble.
//
// bubble fraction = (makespan - ideal) / ideal, ideal = m·(t_f + t_b): the time one stage would
// need with no pipeline at all. A chunk's Forward takes t_f / v and its Backward t_b / v; a split
// backward's BackwardWeight takes t_w / v of that and its BackwardInput the rest, (t_b - t_w) / v.
#include <vector>

#include "schedule/instruction_stream.hpp"
#include "schedule/stream_replay.hpp"

namespace ptdp {

struct SimulationOptions {
  double t_forward = 1.0;         // one microbatch's forward through a whole stage (all v chunks)
  double t_backward = 2.0;        // one microbatch's whole backward through a whole stage
  double transfer_latency = 0.0;  // from the later of a transfer's two posts to its completion
  // The weight-gradient part of t_backward, t_w < t_b, for schedules that split the backward; 0
  // takes half of t_backward (T_F = T_B = T_W, the zero-bubble paper's assumption, at t_b = 2·t_f).
  double t_weight = 0.0;
  double weight_time() const { return t_weight > 0.0 ? t_weight : t_backward / 2; }
  // Groups of sends and receives posted ahead instead of blocking (stream_replay.hpp): the model of
  // asynchronous point-to-point transfers, under which a split backward's W fills the bubble.
  bool transfers_posted_ahead = false;
};

struct SimulationResult {
  std::vector<std::vector<TimedOp>> timelines;  // per stage, its compute ops in time
  double makespan = 0.0;                        // when the last stage finished its stream
  double ideal = 0.0;                           // m·(t_f + t_b)
  double bubble_fraction = 0.0;
  // The most idle time any stage has between the start of its first op and the end of its last,
  // over the ideal. It is the bubble the zero-bubble paper counts: what a step would cost if the
  // stages did not meet at the optimizer step (its post-validation lets the next step start early).
  // ptdp's optimizer step synchronizes the stages, so its step pays bubble_fraction.
  double span_bubble_fraction = 0.0;
};

// Throws ScheduleError if the streams deadlock (verify_schedule() says why in more words) and
// ptdp::Error for times that are not positive (latency: not negative) and finite.
SimulationResult simulate_schedule(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                                   const SimulationOptions& options);

// The paper's bubble fraction: (p - 1) / (v·m); (p - 1) / m for 1F1B and GPipe (v = 1).
double formula_bubble_fraction(const ScheduleShape& shape);

// The zero-bubble paper's ZB-H1 bubble (Qi et al., 2024), with T_F = t_f, T_B = t_b - t_w and
// T_W = t_w: (p - 1)·(T_F + T_B - T_W) / (m·(T_F + T_B + T_W)). 1F1B's is (p - 1)·(T_F + T_B +
// T_W) over the same ideal, the formula above. The simulator gives it with transfers posted ahead
// and T_W <= T_F; with blocking groups ZB-H1's bubble is 1F1B's.
double formula_bubble_fraction_zb_h1(const ScheduleShape& shape, const SimulationOptions& options);

// ZB-H2's: (p - 1)·(T_F + T_B - 2·T_W) over the same ideal, not below 0. The paper counts it
// within each stage's span (span_bubble_fraction); it holds for T_W <= T_F and m >= 2p - 1.
double formula_bubble_fraction_zb_h2(const ScheduleShape& shape, const SimulationOptions& options);

}  // namespace ptdp
