#include "plan/pipeline_simulation.hpp"

#include <cmath>

#include "plugin/plugin_factory.hpp"
#include "schedule/instruction_stream.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp {

struct PipelineSimulation::Ops {
  std::vector<std::vector<ComputeOp>> per_stage;
  std::vector<int> peaks;
};

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

std::string PipelineSimulation::scheduler_for(const ScheduleShape& shape) {
  return shape.chunks > 1 ? "sched-interleaved" : "sched-1f1b";
}

const PipelineSimulation::Ops& PipelineSimulation::ops(const ScheduleShape& shape) {
  auto found = ops_.find(key_of(shape));
  if (found != ops_.end()) return *found->second;
  const std::string name = scheduler_for(shape);
  auto& scheduler = schedulers_[name];
  if (!scheduler)
    scheduler = create_plugin<Scheduler>(registry_.load(name, PluginKind::Scheduler, "scheduler"), toml::table{}, 0, 1);
  auto ops = std::make_shared<Ops>();
  const PipelineSchedule schedule = plan_schedule(*scheduler, shape);
  ops->per_stage = schedule.ops;
  ops->peaks = schedule.report.peak_activations;
  return *(ops_[key_of(shape)] = std::move(ops));
}

const std::vector<int>& PipelineSimulation::peak_activations(const ScheduleShape& shape) { return ops(shape).peaks; }

double PipelineSimulation::makespan(const ScheduleShape& shape, double backward_ratio, double transfer_latency) {
  const double latency = rounded(transfer_latency);
  const auto key = std::make_tuple(shape.stages, shape.chunks, shape.microbatches, backward_ratio, latency);
  auto found = makespans_.find(key);
  if (found != makespans_.end()) return found->second;
  const std::vector<InstructionStream> streams = lower_schedule(shape, ops(shape).per_stage);
  const SimulationResult result = simulate_schedule(shape, streams, {1.0, backward_ratio, latency});
  return makespans_[key] = result.makespan;
}

}  // namespace ptdp
