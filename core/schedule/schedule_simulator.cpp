#include "schedule/schedule_simulator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "schedule/schedule_error.hpp"
#include "schedule/schedule_shape.hpp"

namespace ptdp {
namespace {

void check_time(const char* name, double value, bool zero_allowed) {
  if (!std::isfinite(value) || value < 0.0 || (!zero_allowed && value == 0.0))
    throw Error(std::string("schedule simulation: ") + name + " must be " + (zero_allowed ? "at least 0" : "positive") +
                " (got " + std::to_string(value) + ")");
}

}  // namespace

SimulationResult simulate_schedule(const ScheduleShape& shape, const std::vector<InstructionStream>& streams,
                                   const SimulationOptions& options) {
  check_schedule_shape(shape);
  check_time("the forward time", options.t_forward, false);
  check_time("the backward time", options.t_backward, false);
  check_time("the transfer latency", options.transfer_latency, true);
  check_time("the weight-gradient time", options.t_weight, true);
  if (options.t_weight >= options.t_backward)
    throw Error("schedule simulation: the weight-gradient time (" + std::to_string(options.t_weight) +
                ") must be less than the whole backward's (" + std::to_string(options.t_backward) + ")");
  if (static_cast<int>(streams.size()) != shape.stages)
    throw ScheduleError("schedule simulation: there are instruction streams for " + std::to_string(streams.size()) +
                        " stages, expected p = " + std::to_string(shape.stages));

  const ReplayTiming timing{options.t_forward / shape.chunks, options.t_backward / shape.chunks,
                            options.weight_time() / shape.chunks, options.transfer_latency,
                            options.transfers_posted_ahead};
  StreamReplay replay = replay_streams(shape, streams, timing);
  if (!replay.completed()) throw ScheduleError(deadlock_description(shape, streams, replay));

  SimulationResult result;
  result.timelines = std::move(replay.timelines);
  for (double finish : replay.finish) result.makespan = std::max(result.makespan, finish);
  result.ideal = shape.microbatches * (options.t_forward + options.t_backward);
  result.bubble_fraction = (result.makespan - result.ideal) / result.ideal;
  for (const auto& timeline : result.timelines) {
    if (timeline.empty()) continue;
    double busy = 0.0;
    for (const TimedOp& t : timeline) busy += t.end - t.start;
    const double idle = timeline.back().end - timeline.front().start - busy;
    result.span_bubble_fraction = std::max(result.span_bubble_fraction, idle / result.ideal);
  }
  return result;
}

double formula_bubble_fraction(const ScheduleShape& shape) {
  check_schedule_shape(shape);
  return static_cast<double>(shape.stages - 1) / (static_cast<double>(shape.chunks) * shape.microbatches);
}

double formula_bubble_fraction_zb_h1(const ScheduleShape& shape, const SimulationOptions& options) {
  check_schedule_shape(shape);
  const double f = options.t_forward, w = options.weight_time(), b = options.t_backward - w;
  return (shape.stages - 1) * (f + b - w) / (shape.microbatches * (f + b + w));
}

double formula_bubble_fraction_zb_h2(const ScheduleShape& shape, const SimulationOptions& options) {
  check_schedule_shape(shape);
  const double f = options.t_forward, w = options.weight_time(), b = options.t_backward - w;
  return std::max(0.0, (shape.stages - 1) * (f + b - 2 * w) / (shape.microbatches * (f + b + w)));
}

}  // namespace ptdp
