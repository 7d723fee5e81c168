#include "stored_step.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "plugin/plugin_slots.hpp"

namespace ptdp::host {

StoredStep open_stored_step(const std::string& folder, int64_t wanted, const std::string& store_plugin) {
  PluginRegistry registry(PluginRegistry::default_search_path());
  StoredStep out;
  out.store = create_plugin<CheckpointStore>(registry.load(store_plugin, PluginKind::CheckpointStore),
                                             toml::table{});
  out.store->open_existing(folder);
  const std::vector<int64_t> steps = out.store->list_steps();
  if (steps.empty()) throw Error(fmt::format("{}: no committed step", folder));
  out.step = wanted > 0 ? wanted : steps.back();
  if (!std::binary_search(steps.begin(), steps.end(), out.step))
    throw Error(fmt::format("{}: no step {} (committed steps: {})", folder, out.step, step_list(steps)));
  out.metadata = nlohmann::json::parse(out.store->metadata(out.step), nullptr, false);
  if (!out.metadata.is_object() || !out.metadata.contains("config"))
    throw Error(fmt::format("{}: step {} holds no resolved manifest (saved by an older ptdp)", folder, out.step));
  return out;
}

RunConfig one_process_config(const StoredStep& stored, const std::string& folder, const std::string& what,
                             const std::vector<std::string>& overrides) {
  const nlohmann::json& metadata = stored.metadata;
  const nlohmann::json& config_json = metadata["config"];
  std::vector<std::string> all = {
      "parallel.tensor=1", "parallel.pipeline=1", "parallel.data=1", "parallel.virtual_stages=1",
      "launch.nproc_per_node=1", "launch.nnodes=1", "plugins.communicator=comm-ucx", "plugins.kernels=kernels-ref",
      "plugins.scheduler=sched-1f1b", "precision.params=fp32", "checkpoint.dir=\"\"", "checkpoint.every=0",
      "checkpoint.keep=0", "data.val_every=0", "data.val_fraction=0.0",
      fmt::format("checkpoint.resume_from={}", nlohmann::json(folder).dump()),
      fmt::format("checkpoint.resume_step={}", stored.step),
      fmt::format("run.steps={}", std::max<int64_t>(stored.step, 1))};
  // Trains nothing: the schedule only has to match the saved one, so no change is reported.
  if (metadata.contains("schedule"))
    all.push_back(fmt::format("optimizer.decay_steps={}", metadata["schedule"].value("decay_steps", int64_t{0})));
  // Options of the plugins the training run used may not fit the ones loaded here.
  for (const PluginSlot& slot : kPluginSlots)
    if (slot.kind != PluginKind::CheckpointStore && config_json.contains("plugins") &&
        config_json["plugins"].contains("options"))
      all.push_back(fmt::format("plugins.options.{}={{}}", slot.name));
  all.insert(all.end(), overrides.begin(), overrides.end());
  const std::string source = fmt::format("{} step {}", folder, stored.step);
  RunConfig config = load_manifest_string(manifest_text(config_json), source, all);
  for (const std::string& warning : config.warnings) spdlog::warn("{}", warning);
  if (config.parallel.world_size() != 1)
    throw Error(fmt::format("{}: {} runs in one process: leave parallel.tensor, parallel.pipeline and "
                            "parallel.data at 1 (any layout's checkpoint loads into it)",
                            source, what));
  return config;
}

}  // namespace ptdp::host
