#pragma once
// DeviceProfiler: what `ptdp-host run --profile` asks of a plugin of kind PluginKind::DeviceProfiler
// (profiler-cupti, built only where CUDA is, into the plugin folder's profiler/): every kernel,
// copy and memset this process runs on its device, and the device's SM clock and power while
// recording. The core loads it through the plugin registry only for --profile and only when the
// kernels compute on a GPU, so it never needs CUDA itself; docs/profiling.md says what the core
// makes of the records.
//
// Times are microseconds of std::chrono::steady_clock (its epoch), the clock of the host's own
// timeline spans, so the two can be laid side by side.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ptdp {

struct DeviceActivity {
  enum class Kind { Kernel, Copy, Memset };
  Kind kind = Kind::Kernel;
  std::string name;      // a kernel's demangled name; "copy HtoD" / "DtoH" / "DtoD" / ...; "memset"
  uint32_t stream = 0;   // the device stream it ran on (the profiler's id, stable within a run)
  double start_us = 0, duration_us = 0;
  uint64_t bytes = 0;    // copies and memsets
};

// One reading of the device's state.
struct DeviceSample {
  double time_us = 0;
  double sm_clock_mhz = 0;
  double power_w = 0;
};

// What the device can do at best, where the profiler knows it (0: unknown).
struct DevicePeaks {
  std::string device;            // "NVIDIA H200"
  double bf16_tflops = 0;        // dense tensor-core bf16, datasheet
  double memory_gbs = 0;         // device memory bandwidth, datasheet
  double max_sm_clock_mhz = 0;   // the highest SM clock the device runs at
  double power_limit_w = 0;      // the power cap in force
  std::string source;            // where the figures come from, for the report
};

class DeviceProfiler {
 public:
  virtual ~DeviceProfiler() = default;
  // Profiles the device with this index (the CUDA runtime's numbering) from now on; throws
  // ptdp::Error saying why it cannot. Called once, before the device is first used, so that every
  // kernel of the process is seen.
  virtual void open(int device_index) = 0;
  // Records from now on, until stop(). Calls alternate, starting with start().
  virtual void start() = 0;
  // Stops recording once the caller has waited for its device work; what ran before is kept.
  virtual void stop() = 0;
  // Everything recorded so far, in no particular order; the next call returns only what is newer.
  virtual std::vector<DeviceActivity> take_activities() = 0;
  virtual std::vector<DeviceSample> take_samples() = 0;
  virtual DevicePeaks peaks() const = 0;
};

}  // namespace ptdp
