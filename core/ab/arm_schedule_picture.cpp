#include "ab/arm_schedule_picture.hpp"

#include "plugin/manifest_plugin_set.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"
#include "schedule/schedule_timeline.hpp"

namespace ptdp {

std::string arm_schedule_svg(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  const ManifestPluginSet plugins = load_manifest_plugins(registry, config.plugins, /*with_checkpoint_store=*/false);
  auto scheduler = plugins.create<Scheduler>(PluginPlace{0, config.parallel.world_size()});
  const ScheduleShape shape{config.parallel.pipeline, config.parallel.virtual_stages, config.parallel.microbatches()};
  const PipelineSchedule plan = plan_schedule(*scheduler, shape);
  SimulationOptions times;
  times.transfers_posted_ahead = true;
  return render_timeline_svg(shape, times, simulate_schedule(shape, plan.streams, times),
                             {config.plugins.scheduler + " (simulated)", "units", 1.0});
}

}  // namespace ptdp
