#include "profile/device_profiler_library.hpp"

#include <filesystem>

#include <fmt/format.h>

#include <ptdp/error.hpp>

#include "plugin/plugin_factory.hpp"

namespace ptdp {

void check_profilable(MemoryKind kind, const std::string& kernels) {
  if (kind != MemoryKind::Cuda)
    throw Error(fmt::format("--profile records a GPU's kernels and copies, but plugins.kernels '{}' computes on the "
                            "host: run without --profile, or with a GPU kernels plugin (kernels-fused)",
                            kernels));
}

std::shared_ptr<DeviceProfiler> open_device_profiler(const std::vector<std::string>& search_path, const Device& device,
                                                     const std::string& kernels) {
  check_profilable(device.kind, kernels);
  std::string looked;
  for (const std::string& dir : search_path) {
    const std::filesystem::path file = std::filesystem::path(dir) / "profiler" / kDeviceProfilerLibrary;
    looked += (looked.empty() ? "" : ", ") + dir;
    if (!std::filesystem::exists(file)) continue;
    // Checked like every plugin (entry symbol, ABI, toolchain, kind), and never unloaded: the
    // profiler's callbacks stay registered with CUPTI for the process.
    PluginRegistry registry({});
    auto profiler = create_plugin<DeviceProfiler>(registry.load(file.string(), PluginKind::DeviceProfiler, "--profile"),
                                                  toml::table{});
    profiler->open(device.index);
    return profiler;
  }
  throw Error(fmt::format("--profile: profiler/{} is in no folder of the plugin search path ({}); it is built "
                          "only where CUDA and CUPTI are found (cmake/PtdpCuda.cmake)",
                          kDeviceProfilerLibrary, looked));
}

}  // namespace ptdp
