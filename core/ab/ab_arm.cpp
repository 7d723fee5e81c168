#include "ab/ab_arm.hpp"

#include <fmt/format.h>

#include <cctype>

#include "data/run_data.hpp"
#include "manifest/manifest_loader.hpp"
#include "plugin/config_schema.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "schedule/pipeline_schedule.hpp"

namespace ptdp {

namespace {

void check_plugins(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  struct Slot {
    const std::string& name;
    PluginKind kind;
    const char* slot;
  };
  std::vector<Slot> slots = {{config.plugins.communicator, PluginKind::Communicator, "communicator"},
                             {config.plugins.kernels, PluginKind::LayerKernels, "kernels"},
                             {config.plugins.scheduler, PluginKind::Scheduler, "scheduler"}};
  if (!config.checkpoint.dir.empty())
    slots.push_back({config.plugins.checkpoint, PluginKind::CheckpointStore, "checkpoint"});
  for (const Slot& s : slots) {
    const PluginInfo& info = registry.load(s.name, s.kind, s.slot);
    validated_plugin_config(*info.descriptor, config.plugins.options.at(s.slot));
  }
  // A scheduler only plans, so it can run here: its schedule for this layout is verified now
  // rather than after every other arm has run.
  const PluginInfo& scheduler_info = registry.load(config.plugins.scheduler, PluginKind::Scheduler, "scheduler");
  auto scheduler = create_plugin<Scheduler>(scheduler_info, config.plugins.options.at("scheduler"),
                                            PluginPlace{0, config.parallel.world_size()});
  plan_schedule(*scheduler, {config.parallel.pipeline, config.parallel.virtual_stages, config.parallel.microbatches()});
}

}  // namespace

std::string arm_name_problem(const std::string& name) {
  if (name.empty()) return "an arm needs a name";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return fmt::format("arm name '{}': use letters, digits, '.', '_' and '-' (it names files)", name);
  return "";
}

RunConfig validate_arm(const AbArm& arm, bool multi_node) {
  try {
    RunConfig config = load_manifest(arm.manifest, arm.sets);
    RunData::open(config);
    if (config.launch.nnodes != 1 && !multi_node)
      throw Error(fmt::format("launch.nnodes = {}: a multi-node arm needs --launcher (e.g. 'srun -N {}')",
                              config.launch.nnodes, config.launch.nnodes));
    check_plugins(config);
    return config;
  } catch (const std::exception& e) {
    throw Error(fmt::format("arm '{}': {}", arm.name, e.what()));
  }
}

}  // namespace ptdp
