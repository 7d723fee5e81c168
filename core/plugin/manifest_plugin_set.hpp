#pragma once
// The plugins a manifest names, loaded once through the registry with their options checked
// against the schema each declares: what validate, ab and every rank of a run load, the same way.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_slots.hpp"

namespace ptdp {

// One slot's plugin refused: key() is the manifest key at fault (plugins.<slot> when the plugin
// cannot be loaded or is of another kind, plugins.options.<slot> when its options fail its schema);
// what() is the reason alone, for callers that add the key or their own prefix.
class PluginSlotError : public PluginError {
 public:
  PluginSlotError(std::string key, const std::string& reason) : PluginError(reason), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

struct SlotPlugin {
  const PluginSlot* slot;
  const PluginInfo* info;
  toml::table options;  // the manifest's table for the slot, as written
};

class ManifestPluginSet {
 public:
  explicit ManifestPluginSet(std::vector<SlotPlugin> loaded) : loaded_(std::move(loaded)) {}

  // In slot order; the checkpoint store only when it was asked for.
  const std::vector<SlotPlugin>& loaded() const { return loaded_; }
  const SlotPlugin* find(PluginKind kind) const;
  // Throws ptdp::Error when the slot was not loaded.
  const SlotPlugin& at(PluginKind kind) const;

  // A new object of the slot's plugin with the manifest's options.
  template <class Interface>
  std::shared_ptr<Interface> create(const PluginPlace& place = {}) const {
    const SlotPlugin& p = at(PluginKindOf<Interface>::value);
    return create_plugin<Interface>(*p.info, p.options, place);
  }

 private:
  std::vector<SlotPlugin> loaded_;
};

// The plugin of the slot that takes Interface, alone, made with the manifest's options for it.
template <class Interface>
std::shared_ptr<Interface> create_slot_plugin(PluginRegistry& registry, const RunConfig::Plugins& plugins,
                                              const PluginPlace& place = {}) {
  const PluginSlot& slot = plugin_slot(PluginKindOf<Interface>::value);
  return create_plugin<Interface>(registry.load(slot.named_in(plugins), slot.kind), slot.options_in(plugins), place);
}

// Loads the plugin of every slot of `plugins` (the checkpoint store only when `with_checkpoint_store`:
// a run that neither saves nor resumes never opens one) and checks its options against its
// schema. Throws PluginSlotError on the first slot refused.
ManifestPluginSet load_manifest_plugins(PluginRegistry& registry, const RunConfig::Plugins& plugins,
                                        bool with_checkpoint_store);

}  // namespace ptdp
