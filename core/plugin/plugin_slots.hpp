#pragma once
// The manifest's plugin slots: each is a key of [plugins] and a table of [plugins.options], takes
// plugins of one kind, and is held in one field of RunConfig::Plugins. Every walk over the slots
// goes through this table, so a new slot is one line here.
#include <array>
#include <string>

#include "manifest/run_config.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp {

struct PluginSlot {
  const char* name;  // "communicator": plugins.communicator, plugins.options.communicator
  PluginKind kind;
  std::string RunConfig::Plugins::*plugin;  // the plugin the manifest names for the slot

  const std::string& named_in(const RunConfig::Plugins& plugins) const { return plugins.*plugin; }
  const toml::table& options_in(const RunConfig::Plugins& plugins) const { return plugins.options.at(name); }
};

inline constexpr std::array<PluginSlot, 4> kPluginSlots = {{
    {"communicator", PluginKind::Communicator, &RunConfig::Plugins::communicator},
    {"kernels", PluginKind::LayerKernels, &RunConfig::Plugins::kernels},
    {"scheduler", PluginKind::Scheduler, &RunConfig::Plugins::scheduler},
    {"checkpoint", PluginKind::CheckpointStore, &RunConfig::Plugins::checkpoint},
}};

// The slot that takes plugins of `kind`.
inline const PluginSlot& plugin_slot(PluginKind kind) {
  for (const PluginSlot& slot : kPluginSlots)
    if (slot.kind == kind) return slot;
  throw Error(std::string("no manifest slot takes ") + plugin_kind_name(kind) + " plugins");
}

}  // namespace ptdp
