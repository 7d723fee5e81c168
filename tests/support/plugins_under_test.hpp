#pragma once
// Which plugins a conformance suite checks: the entries of its environment variable when set,
// else every plugin of its kind this build made, so that a plugin is held to its kind's suite as
// soon as it is built (the CUDA ones on a CUDA build). They are looked for where the suite loads
// them from: PTDP_TEST_PLUGIN_DIR (the build's folder, set for every test), then lib/ptdp beside
// the program's bin/ — the only one of the two that exists where scripts/gpu's bundle runs.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "plugin/plugin_registry.hpp"

namespace ptdp::test {

// The variable's non-empty entries between `separator`s; unset or empty, the built plugins of
// `kind` by name ("comm-ucx" for lib/ptdp/libptdp-comm-ucx.so), in the folder's order.
inline std::vector<std::string> plugins_under_test(const char* variable, char separator, PluginKind kind) {
  std::vector<std::string> entries;
  const char* listed = std::getenv(variable);
  if (listed && *listed) {
    std::stringstream text(listed);
    for (std::string entry; std::getline(text, entry, separator);)
      if (!entry.empty()) entries.push_back(entry);
    return entries;
  }
  PluginRegistry registry(PluginRegistry::default_search_path({PTDP_TEST_PLUGIN_DIR}));
  for (const DiscoveredPlugin& p : registry.discover()) {
    if (!p.descriptor || p.descriptor->kind != kind) continue;
    const std::string file = std::filesystem::path(p.path).stem().string();  // libptdp-<name>
    std::string name = file.substr(std::string("libptdp-").size());
    if (std::find(entries.begin(), entries.end(), name) == entries.end()) entries.push_back(std::move(name));
  }
  return entries;
}

}  // namespace ptdp::test
