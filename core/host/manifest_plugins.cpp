#include "manifest_plugins.hpp"

#include <fmt/format.h>
#include <ptdp/communicator.hpp>
#include <ptdp/layer_kernels.hpp>

#include "manifest/manifest_loader.hpp"
#include "plugin/config_schema.hpp"
#include "plugin/plugin_error.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "runtime/device_placement.hpp"
#include "runtime/kernels_precision.hpp"
#include "schedule/pipeline_schedule.hpp"

namespace ptdp::host {

std::vector<std::string> check_manifest_plugins(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  const struct {
    const char* slot;
    const std::string& name;
    PluginKind kind;
  } slots[] = {{"communicator", config.plugins.communicator, PluginKind::Communicator},
               {"kernels", config.plugins.kernels, PluginKind::LayerKernels},
               {"scheduler", config.plugins.scheduler, PluginKind::Scheduler},
               {"checkpoint", config.plugins.checkpoint, PluginKind::CheckpointStore}};
  std::vector<std::string> lines;
  std::string loaded;
  const PluginInfo *scheduler = nullptr, *communicator_info = nullptr, *kernels = nullptr;
  std::string slot_key;
  try {
    for (const auto& s : slots) {
      slot_key = fmt::format("plugins.{}", s.slot);
      const PluginInfo& info = registry.load(s.name, s.kind, s.slot);
      slot_key = fmt::format("plugins.options.{}", s.slot);
      validated_plugin_config(*info.descriptor, config.plugins.options.at(s.slot));
      loaded += fmt::format("{}{} {}", loaded.empty() ? "" : ", ", info.descriptor->name, info.descriptor->version);
      if (s.kind == PluginKind::Scheduler) scheduler = &info;
      if (s.kind == PluginKind::Communicator) communicator_info = &info;
      if (s.kind == PluginKind::LayerKernels) kernels = &info;
    }
    // What the two plugins declare decides whether they can work together on these ranks; their
    // constructors touch no device, so this costs no GPU context in the launching process.
    slot_key = "plugins.communicator";
    auto communicator = create_plugin<Communicator>(*communicator_info, config.plugins.options.at("communicator"));
    auto backend = create_plugin<LayerKernels>(*kernels, config.plugins.options.at("kernels"));
    check_memory_pairing(backend->device().kind, communicator->memory_kinds(), config.plugins.kernels,
                         config.plugins.communicator);
    try {
      check_kernels_precision(config, kernels->descriptor->abi_minor, *backend);
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
    auto object = create_plugin<Scheduler>(*scheduler, config.plugins.options.at("scheduler"));
    const PipelineSchedule schedule = plan_schedule(*object, shape);
    lines.push_back(fmt::format("loaded       {} (options checked against their schemas)", loaded));
    lines.push_back(fmt::format("schedule     {} verified for p={} v={} m={}: peak activations on stage 0: {}",
                                config.plugins.scheduler, shape.stages, shape.chunks, shape.microbatches,
                                schedule.report.peak_activations.at(0)));
  } catch (const ManifestError&) {
    throw;
  } catch (const Error& e) {
    throw ManifestError(fmt::format("{}: {}: {}", config.source, slot_key, e.what()));
  }
  return lines;
}

MemoryKind kernels_memory(const RunConfig& config) {
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  const PluginInfo& info = registry.load(config.plugins.kernels, PluginKind::LayerKernels, "kernels");
  return create_plugin<LayerKernels>(info, config.plugins.options.at("kernels"))->device().kind;
}

}  // namespace ptdp::host
