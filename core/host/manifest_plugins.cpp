#include "manifest_plugins.hpp"

#include <fmt/format.h>
#include <ptdp/communicator.hpp>
#include <ptdp/layer_kernels.hpp>

#include "manifest/manifest_loader.hpp"
#include "plugin/manifest_plugin_set.hpp"
#include "runtime/device_placement.hpp"
#include "plan/activation_choices.hpp"
#include "runtime/kernels_activation_memory.hpp"
#include "runtime/kernels_precision.hpp"
#include "schedule/pipeline_schedule.hpp"

namespace ptdp::host {

std::vector<std::string> check_manifest_plugins(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  std::vector<std::string> lines;
  std::string slot_key;
  try {
    const ManifestPluginSet plugins = load_manifest_plugins(registry, config.plugins, /*with_checkpoint_store=*/true);
    std::string loaded;
    for (const SlotPlugin& p : plugins.loaded())
      loaded += fmt::format("{}{} {}", loaded.empty() ? "" : ", ", p.info->descriptor->name, p.info->descriptor->version);
    // What the two plugins declare decides whether they can work together on these ranks; their
    // constructors touch no device, so this costs no GPU context in the launching process.
    slot_key = "plugins.communicator";
    auto communicator = plugins.create<Communicator>();
    auto backend = plugins.create<LayerKernels>();
    check_memory_pairing(backend->device().kind, communicator->memory_kinds(), config.plugins.kernels,
                         config.plugins.communicator);
    try {
      const uint32_t kernels_abi_minor = plugins.at(PluginKind::LayerKernels).info->descriptor->abi_minor;
      check_kernels_precision(config, kernels_abi_minor, *backend);
      check_kernels_activation_memory(config, kernels_abi_minor, *backend);
    } catch (const Error& e) {
      throw ManifestError(fmt::format("{}: {}", config.source, e.what()));  // the message names its key
    }
    slot_key = "launch.ranks_per_gpu";
    PlacementRequest sharing;
    sharing.kind = backend->device().kind;
    sharing.local_world_size = config.launch.nproc_per_node;
    sharing.ranks_per_gpu = config.launch.ranks_per_gpu;
    sharing.communicator = config.plugins.communicator;
    sharing.comm_capabilities = communicator->capabilities();
    check_device_sharing(sharing);
    slot_key = "plugins.scheduler";
    const ScheduleShape shape{config.parallel.pipeline, config.parallel.virtual_stages,
                              config.parallel.microbatches()};
    const PipelineSchedule schedule = plan_schedule(*plugins.create<Scheduler>(), shape);
    lines.push_back(fmt::format("loaded       {} (options checked against their schemas)", loaded));
    lines.push_back(fmt::format("schedule     {} verified for p={} v={} m={}: peak activations on stage 0: {}",
                                config.plugins.scheduler, shape.stages, shape.chunks, shape.microbatches,
                                schedule.report.peak_activations.at(0)));
    lines.push_back(fmt::format("activations  {}", activation_choices_text(config, schedule.report.peak_activations)));
  } catch (const ManifestError&) {
    throw;
  } catch (const PluginSlotError& e) {
    throw ManifestError(fmt::format("{}: {}: {}", config.source, e.key(), e.what()));
  } catch (const Error& e) {
    throw ManifestError(fmt::format("{}: {}: {}", config.source, slot_key, e.what()));
  }
  return lines;
}

MemoryKind kernels_memory(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  return create_slot_plugin<LayerKernels>(registry, config.plugins)->device().kind;
}

}  // namespace ptdp::host
