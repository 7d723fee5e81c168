#include "stored_step.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"

namespace ptdp::host {

StoredStep open_stored_step(const std::string& folder, int64_t wanted, const std::string& store_plugin) {
  PluginRegistry registry(PluginRegistry::default_search_path());
  StoredStep out;
  out.store = create_plugin<CheckpointStore>(registry.load(store_plugin, PluginKind::CheckpointStore, "checkpoint"),
                                             toml::table{}, 0, 1);
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

}  // namespace ptdp::host
