#include "ab/ab_arm.hpp"

#include <fmt/format.h>

#include <cctype>

#include "data/run_data.hpp"
#include "manifest/manifest_loader.hpp"
#include "plugin/manifest_plugin_set.hpp"
#include "schedule/pipeline_schedule.hpp"

namespace ptdp {

namespace {

void check_plugins(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  const ManifestPluginSet plugins =
      load_manifest_plugins(registry, config.plugins, /*with_checkpoint_store=*/!config.checkpoint.dir.empty());
  // A scheduler only plans, so it can run here: its schedule for this layout is verified now
  // rather than after every other arm has run.
  auto scheduler = plugins.create<Scheduler>(PluginPlace{0, config.parallel.world_size()});
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
