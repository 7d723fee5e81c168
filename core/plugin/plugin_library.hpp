#pragma once
// Opening one plugin file: dlopen through Boost.DLL, the entry symbol, and every check of the
// descriptor that does not depend on where the plugin is used. Libraries are kept in a
// process-lifetime table and never unloaded (GPU plugins own threads and driver contexts that
// must not lose their code), so each file is opened once and its verdict is remembered.
#include <string>

#include "plugin/plugin_registry.hpp"

namespace ptdp {

// Loads `file` (or returns the earlier result for the same canonical path). Throws PluginError
// "plugin <path>: <reason>" when the file is missing, not loadable, or its descriptor is refused.
const PluginInfo& open_plugin_library(const std::string& file);

}  // namespace ptdp
