#pragma once
// Which plugins a conformance suite checks: the entries of its environment variable when set,
// else every plugin of its kind this build made (found in PTDP_TEST_PLUGIN_DIR, set for every
// test), so that a plugin is held to its kind's suite as soon as it is built (the CUDA ones on a
// CUDA build).
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
  PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  for (const DiscoveredPlugin& p : registry.discover()) {
    if (!p.descriptor || p.descriptor->kind != kind) continue;
    const std::string file = std::filesystem::path(p.path).stem().string();  // libptdp-<name>
    entries.push_back(file.substr(std::string("libptdp-").size()));
  }
  return entries;
}

}  // namespace ptdp::test
