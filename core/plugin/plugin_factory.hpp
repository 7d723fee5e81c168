#pragma once
// Making plugin objects: the manifest's table for the plugin is validated against the schema
// the plugin declared, handed over as a read-only ConfigView, and the object is created and later
// destroyed by the plugin's own functions.
#include <memory>

#include <toml++/toml.h>

#include "plugin/plugin_registry.hpp"
#include "ptdp/device_profiler.hpp"
#include "ptdp/sdk.hpp"

namespace ptdp {

// Validates `options` (unknown key, wrong type, out of range, not among the choices: PluginError
// naming the plugin, the key and the reason), fills defaults, and calls the plugin's create()
// (an exception there becomes PluginError "plugin '<name>': init failed: <message>"). The
// returned pointer owns the object, its ConfigView and its context; its deleter calls the
// plugin's destroy(). The plugin's log lines go to spdlog, prefixed with its name.
// Where the process making the object sits in the job (PluginContext's rank fields); a tool that
// runs outside a job is rank 0 of 1.
struct PluginPlace {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

std::shared_ptr<void> create_plugin_object(const PluginInfo& plugin, const toml::table& options,
                                           const PluginPlace& place = {});

template <class Interface>
struct PluginKindOf;
template <>
struct PluginKindOf<Communicator> {
  static constexpr PluginKind value = PluginKind::Communicator;
};
template <>
struct PluginKindOf<LayerKernels> {
  static constexpr PluginKind value = PluginKind::LayerKernels;
};
template <>
struct PluginKindOf<Scheduler> {
  static constexpr PluginKind value = PluginKind::Scheduler;
};
template <>
struct PluginKindOf<CheckpointStore> {
  static constexpr PluginKind value = PluginKind::CheckpointStore;
};
template <>
struct PluginKindOf<DeviceProfiler> {
  static constexpr PluginKind value = PluginKind::DeviceProfiler;
};

// create_plugin_object() as the interface of the plugin's kind (refused if the kinds differ).
template <class Interface>
std::shared_ptr<Interface> create_plugin(const PluginInfo& plugin, const toml::table& options,
                                         const PluginPlace& place = {}) {
  constexpr PluginKind kind = PluginKindOf<Interface>::value;
  if (plugin.descriptor->kind != kind)
    throw PluginError("plugin " + plugin.path + " is a " + plugin_kind_name(plugin.descriptor->kind) +
                      " plugin, not a " + plugin_kind_name(kind) + " plugin");
  std::shared_ptr<void> object = create_plugin_object(plugin, options, place);
  return std::shared_ptr<Interface>(object, static_cast<Interface*>(object.get()));
}

}  // namespace ptdp
