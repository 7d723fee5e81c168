#pragma once
// CommPlugin: loads libptdp-comm-nccl.so the way the host does (dlopen, the entry symbol, the
// descriptor) and makes communicators with a configuration built from the plugin's own schema,
// so this program needs nothing of the core.
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "ptdp/communicator.hpp"
#include "ptdp/plugin.hpp"

using ConfigValue = std::variant<bool, int64_t, double, std::string>;

class CommPlugin {
 public:
  explicit CommPlugin(const std::string& path);
  // A new communicator of this process (global `rank` of `world_size`); keys in `overrides`
  // replace the schema's defaults and must exist in the schema.
  std::shared_ptr<ptdp::Communicator> create(int rank, int world_size,
                                             const std::map<std::string, ConfigValue>& overrides = {}) const;

 private:
  const ptdp::PluginDescriptor* descriptor_ = nullptr;
};
