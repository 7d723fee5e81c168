#pragma once
// What a plugin declares of itself beyond its descriptor, the declarations the core pairs plugins
// by: a communicator's memory kinds and capabilities, a kernels plugin's device, activation type
// and precisions. Read from an object made with the plugin's defaults, whose constructor touches
// no device; `ptdp-host plugins` shows them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plugin/plugin_registry.hpp"

namespace ptdp::host {

struct PluginDeclarations {
  // {"memory_kinds": ["host"], "capabilities": [...]} or {"device": "host", "activation": "f32",
  // "precisions": [...]}; empty for the kinds that declare nothing.
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  std::vector<std::string> lines;  // the same, as `plugins` prints it
  std::string error;               // why no object could be made with the defaults
};

PluginDeclarations plugin_declarations(const PluginInfo& plugin);

}  // namespace ptdp::host
