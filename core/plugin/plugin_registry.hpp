#pragma once
// The plugin registry: finds plugins by name along a search path (or takes an explicit file),
// loads them once per process and never unloads them, and refuses any that does not fit with a
// one-line PluginError naming the file and the reason.
#include <string>
#include <vector>

#include "plugin/plugin_error.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp {

// A plugin that passed every check of its file (entry symbol, ABI, toolchain, schema).
struct PluginInfo {
  std::string path;  // canonical path of the shared object
  const PluginDescriptor* descriptor;
};

// One libptdp-*.so seen by discover(): either loaded (descriptor set) or refused (error set).
struct DiscoveredPlugin {
  std::string path;
  const PluginDescriptor* descriptor;  // null if refused
  std::string error;
};

class PluginRegistry {
 public:
  explicit PluginRegistry(std::vector<std::string> search_path);

  // The manifest's entries, then PTDP_PLUGIN_PATH (':'-separated), then
  // <dir of /proc/self/exe>/../lib/ptdp (and the install-relative plugin dir), then the
  // compile-time PTDP_PLUGIN_INSTALL_DIR; normalized, duplicates dropped.
  static std::vector<std::string> default_search_path(
      const std::vector<std::string>& manifest_search_path = {});

  // `name_or_path` is a plugin name ("sched-1f1b" -> libptdp-sched-1f1b.so, first match along
  // the search path) or a file (contains '/' or ends in ".so"). `slot` is the manifest slot
  // ("scheduler") the plugin is for, used in messages. Each file is loaded once per process;
  // the returned reference stays valid for the process lifetime.
  const PluginInfo& load(const std::string& name_or_path, PluginKind expected_kind,
                         const std::string& slot);
  // For the manifest slot that takes `expected_kind` (plugin_slots.hpp).
  const PluginInfo& load(const std::string& name_or_path, PluginKind expected_kind);

  // Every libptdp-*.so in the search path's folders, in search order (loading each one).
  std::vector<DiscoveredPlugin> discover();

  const std::vector<std::string>& search_path() const { return search_path_; }

 private:
  std::vector<std::string> search_path_;
};

}  // namespace ptdp
