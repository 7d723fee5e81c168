#include "profile/device_profiler_library.hpp"

#include <dlfcn.h>

#include <filesystem>

#include <fmt/format.h>

#include <ptdp/error.hpp>

namespace ptdp {

void check_profilable(MemoryKind kind, const std::string& kernels) {
  if (kind != MemoryKind::Cuda)
    throw Error(fmt::format("--profile records a GPU's kernels and copies, but plugins.kernels '{}' computes on the "
                            "host: run without --profile, or with a GPU kernels plugin (kernels-fused)",
                            kernels));
}

std::unique_ptr<DeviceProfiler> open_device_profiler(const std::vector<std::string>& search_path, const Device& device,
                                                     const std::string& kernels) {
  check_profilable(device.kind, kernels);
  std::string looked;
  for (const std::string& dir : search_path) {
    const std::filesystem::path file = std::filesystem::path(dir) / "profiler" / kDeviceProfilerLibrary;
    looked += (looked.empty() ? "" : ", ") + dir;
    if (!std::filesystem::exists(file)) continue;
    // Never closed: the profiler's callbacks stay registered with CUPTI for the process.
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) throw Error(fmt::format("--profile: cannot load {}: {}", file.string(), dlerror()));
    auto entry = reinterpret_cast<PtdpDeviceProfilerEntryFn>(dlsym(library, PTDP_DEVICE_PROFILER_ENTRY_NAME));
    if (!entry) throw Error(fmt::format("--profile: {} has no {}", file.string(), PTDP_DEVICE_PROFILER_ENTRY_NAME));
    return std::unique_ptr<DeviceProfiler>(entry(device.index));
  }
  throw Error(fmt::format("--profile: profiler/{} is in no folder of the plugin search path ({}); it is built "
                          "only where CUDA and CUPTI are found (cmake/PtdpCuda.cmake)",
                          kDeviceProfilerLibrary, looked));
}

}  // namespace ptdp
