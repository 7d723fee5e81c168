#include "plugin/manifest_plugin_set.hpp"

#include <fmt/format.h>

#include "plugin/config_schema.hpp"

namespace ptdp {

const SlotPlugin* ManifestPluginSet::find(PluginKind kind) const {
  for (const SlotPlugin& p : loaded_)
    if (p.slot->kind == kind) return &p;
  return nullptr;
}

const SlotPlugin& ManifestPluginSet::at(PluginKind kind) const {
  const SlotPlugin* p = find(kind);
  if (!p) throw Error(fmt::format("plugins.{} was not loaded", plugin_slot(kind).name));
  return *p;
}

ManifestPluginSet load_manifest_plugins(PluginRegistry& registry, const RunConfig::Plugins& plugins,
                                        bool with_checkpoint_store) {
  std::vector<SlotPlugin> loaded;
  for (const PluginSlot& slot : kPluginSlots) {
    if (slot.kind == PluginKind::CheckpointStore && !with_checkpoint_store) continue;
    SlotPlugin p{&slot, nullptr, slot.options_in(plugins)};
    try {
      p.info = &registry.load(slot.named_in(plugins), slot.kind, slot.name);
    } catch (const Error& e) {
      throw PluginSlotError(fmt::format("plugins.{}", slot.name), e.what());
    }
    try {
      validated_plugin_config(*p.info->descriptor, p.options);
    } catch (const Error& e) {
      throw PluginSlotError(fmt::format("plugins.options.{}", slot.name), e.what());
    }
    loaded.push_back(std::move(p));
  }
  return ManifestPluginSet(std::move(loaded));
}

}  // namespace ptdp
