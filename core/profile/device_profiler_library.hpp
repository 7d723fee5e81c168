#pragma once
// Opens the device profiler for `run --profile`: profiler/libptdp-profiler-cupti.so in a folder of
// the plugin search path, which a build makes only where CUDA is. Refuses with one line saying
// what to do when the kernels compute on the host, or when the library is missing or cannot
// profile this device.
#include <memory>
#include <string>
#include <vector>

#include <ptdp/device_profiler.hpp>
#include <ptdp/tensor.hpp>

namespace ptdp {

inline constexpr const char* kDeviceProfilerLibrary = "libptdp-profiler-cupti.so";

// Throws ptdp::Error with one line when kernels that compute in `kind` leave nothing to profile
// (they compute on the host). `kernels` names the plugin, for the message.
void check_profilable(MemoryKind kind, const std::string& kernels);

// Call before the device is first used. Runs check_profilable first.
std::shared_ptr<DeviceProfiler> open_device_profiler(const std::vector<std::string>& search_path, const Device& device,
                                                     const std::string& kernels);

}  // namespace ptdp
