#include "plan/pipeline_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "plugin/plugin_factory.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/op_kinds.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {

namespace {

// Whether a scheduler's ops split the backward: the plugin says it by what it returns.
bool splits_backward(const std::vector<ComputeOp>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const ComputeOp& op) { return op.kind == OpKind::BackwardWeight; });
}

// Three significant digits: transfer latencies that differ below that give the same makespan to
// well within the model's accuracy, and the cache then serves a whole search.
double rounded(double x) {
  if (x <= 0) return 0;
  const double scale = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return std::round(x / scale) * scale;
}

}  // namespace

PipelineSimulation::PipelineSimulation(const std::vector<std::string>& plugin_search_path)
    : registry_(PluginRegistry::default_search_path(plugin_search_path)) {}

int PipelineSimulation::scheduler_index(const ShapeKey& key, std::string* refusals) {
  if (!refusals) {
    auto found = served_by_.find(key);
    if (found != served_by_.end()) return found->second;
  }
  if (schedulers_.empty())
    for (const char* name : kStockSchedulers)
      schedulers_.push_back(create_plugin<Scheduler>(registry_.load(name, PluginKind::Scheduler), toml::table{}));
  const auto [p, v, m, split] = key;
  // Each plugin knows the shapes it serves: the first that does not refuse this one, and splits
  // the backward as asked, plans it.
  int index = -1;
  for (size_t i = 0; i < schedulers_.size() && index < 0; ++i) {
    try {
      if (splits_backward(schedulers_[i]->stage_ops({p, v, m}, 0)) == split) index = static_cast<int>(i);
    } catch (const Error& e) {
      if (refusals) *refusals += fmt::format("{}{}", refusals->empty() ? "" : "; ", e.what());
    }
  }
  return served_by_[key] = index;
}

const Scheduler& PipelineSimulation::scheduler_for(const ScheduleShape& shape, bool split_backward) {
  std::string refusals;
  const int index = scheduler_index({shape.stages, shape.chunks, shape.microbatches, split_backward}, &refusals);
  if (index < 0)
    throw Error(fmt::format("no stock scheduler serves p={} v={} m={}{}{}", shape.stages, shape.chunks,
                            shape.microbatches, split_backward ? " with a split backward" : "",
                            refusals.empty() ? "" : ": " + refusals));
  return *schedulers_[index];
}

std::optional<std::string> PipelineSimulation::scheduler_name(const ScheduleShape& shape, bool split_backward) {
  const int index = scheduler_index({shape.stages, shape.chunks, shape.microbatches, split_backward});
  if (index < 0) return std::nullopt;
  return kStockSchedulers[index];
}

std::shared_ptr<const std::vector<InstructionStream>> PipelineSimulation::streams(const ScheduleShape& shape, bool split) {
  const ShapeKey key{shape.stages, shape.chunks, shape.microbatches, split};
  for (const auto& [cached, streams] : recent_streams_)
    if (cached == key) return streams;
  PipelineSchedule schedule = plan_schedule(scheduler_for(shape, split), shape);
  peaks_[key] = schedule.report.peak_activations;
  auto streams = std::make_shared<const std::vector<InstructionStream>>(std::move(schedule.streams));
  recent_streams_.emplace_front(key, streams);
  if (recent_streams_.size() > kRecentShapes) recent_streams_.pop_back();
  return streams;
}

ScheduleShape PipelineSimulation::simulated_shape(const ScheduleShape& shape) {
  if (shape.microbatches <= kLongStepGroups * shape.stages) return shape;
  return {shape.stages, shape.chunks, kLongStepGroups * shape.stages};
}

const std::vector<int>& PipelineSimulation::peak_activations(const ScheduleShape& shape, bool split_backward) {
  const ScheduleShape simulated = simulated_shape(shape);
  const ShapeKey key{simulated.stages, simulated.chunks, simulated.microbatches, split_backward};
  auto found = peaks_.find(key);
  if (found == peaks_.end()) {
    streams(simulated, split_backward);
    found = peaks_.find(key);
  }
  return found->second;
}

double PipelineSimulation::replayed_makespan(const ScheduleShape& shape, bool split, double backward_ratio,
                                             double weight_ratio, double latency) {
  if (!split) weight_ratio = 0;  // nothing reads it: one cache entry serves every ratio
  const auto key = std::make_tuple(shape.stages, shape.chunks, shape.microbatches, split, backward_ratio, weight_ratio,
                                   latency);
  auto found = makespans_.find(key);
  if (found != makespans_.end()) return found->second;
  SimulationOptions options{1.0, backward_ratio, latency, weight_ratio};
  // A split backward's W fills the bubble only with transfers posted ahead, as the executor posts
  // them on the host (pipeline_executor.hpp).
  options.transfers_posted_ahead = split;
  return makespans_[key] = simulate_schedule(shape, *streams(shape, split), options).makespan;
}

double PipelineSimulation::makespan(const ScheduleShape& shape, bool split_backward, double backward_ratio,
                                    double weight_ratio, double transfer_latency) {
  const double latency = rounded(transfer_latency);
  const double weight = rounded(weight_ratio);
  const ScheduleShape last = simulated_shape(shape);
  auto replayed = [&](const ScheduleShape& s) { return replayed_makespan(s, split_backward, backward_ratio, weight, latency); };
  if (last.microbatches == shape.microbatches) return replayed(shape);
  ScheduleShape before = last;
  before.microbatches -= shape.stages;
  const double end = replayed(last);
  const double per_group = end - replayed(before);
  const double groups = static_cast<double>(shape.microbatches - last.microbatches) / shape.stages;
  return end + groups * per_group;
}

}  // namespace ptdp
