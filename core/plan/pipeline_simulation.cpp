#include "plan/pipeline_simulation.hpp"

#include <fmt/format.h>

#include <cmath>

#include "plugin/plugin_factory.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {

namespace {

std::tuple<int, int, int> key_of(const ScheduleShape& s) { return {s.stages, s.chunks, s.microbatches}; }

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

const Scheduler& PipelineSimulation::scheduler_for(const ScheduleShape& shape) {
  if (schedulers_.empty())
    for (const char* name : kStockSchedulers)
      schedulers_.push_back(create_plugin<Scheduler>(registry_.load(name, PluginKind::Scheduler), toml::table{}));
  // Each plugin knows the shapes it serves: the first that does not refuse this one plans it.
  std::string refusals;
  for (const auto& scheduler : schedulers_) {
    try {
      scheduler->stage_ops(shape, 0);
      return *scheduler;
    } catch (const Error& e) {
      refusals += fmt::format("{}{}", refusals.empty() ? "" : "; ", e.what());
    }
  }
  throw Error(fmt::format("no stock scheduler serves p={} v={} m={}: {}", shape.stages, shape.chunks,
                          shape.microbatches, refusals));
}

std::shared_ptr<const std::vector<InstructionStream>> PipelineSimulation::streams(const ScheduleShape& shape) {
  for (const auto& [key, streams] : recent_streams_)
    if (key == key_of(shape)) return streams;
  PipelineSchedule schedule = plan_schedule(scheduler_for(shape), shape);
  peaks_[key_of(shape)] = schedule.report.peak_activations;
  auto streams = std::make_shared<const std::vector<InstructionStream>>(std::move(schedule.streams));
  recent_streams_.emplace_front(key_of(shape), streams);
  if (recent_streams_.size() > kRecentShapes) recent_streams_.pop_back();
  return streams;
}

ScheduleShape PipelineSimulation::simulated_shape(const ScheduleShape& shape) {
  if (shape.microbatches <= kLongStepGroups * shape.stages) return shape;
  return {shape.stages, shape.chunks, kLongStepGroups * shape.stages};
}

const std::vector<int>& PipelineSimulation::peak_activations(const ScheduleShape& shape) {
  const ScheduleShape simulated = simulated_shape(shape);
  auto found = peaks_.find(key_of(simulated));
  if (found == peaks_.end()) {
    streams(simulated);
    found = peaks_.find(key_of(simulated));
  }
  return found->second;
}

double PipelineSimulation::replayed_makespan(const ScheduleShape& shape, double backward_ratio, double latency) {
  const auto key = std::make_tuple(shape.stages, shape.chunks, shape.microbatches, backward_ratio, latency);
  auto found = makespans_.find(key);
  if (found != makespans_.end()) return found->second;
  const SimulationResult result = simulate_schedule(shape, *streams(shape), {1.0, backward_ratio, latency});
  return makespans_[key] = result.makespan;
}

double PipelineSimulation::makespan(const ScheduleShape& shape, double backward_ratio, double transfer_latency) {
  const double latency = rounded(transfer_latency);
  const ScheduleShape last = simulated_shape(shape);
  if (last.microbatches == shape.microbatches) return replayed_makespan(shape, backward_ratio, latency);
  ScheduleShape before = last;
  before.microbatches -= shape.stages;
  const double end = replayed_makespan(last, backward_ratio, latency);
  const double per_group = end - replayed_makespan(before, backward_ratio, latency);
  const double groups = static_cast<double>(shape.microbatches - last.microbatches) / shape.stages;
  return end + groups * per_group;
}

}  // namespace ptdp
