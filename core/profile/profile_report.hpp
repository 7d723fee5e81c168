#pragma once
// The table `run --profile` prints for a rank: the device's time over the profiled steps by
// kind of kernel, what the heavy kinds achieved against the device's peak, the time no kernel
// ran, and the SM clock and power meanwhile. Built from plain records, so it needs no device.
#include <cstdint>
#include <string>
#include <vector>

#include <ptdp/device_profiler.hpp>

#include "manifest/run_config.hpp"
#include "profile/kernel_class.hpp"

namespace ptdp {

// One profiled step: from its first host call to the end of its device work.
struct ProfileWindow {
  double start_us = 0, end_us = 0;
};

// The activities that ran, at least in part, inside the windows (the trace shows those only).
std::vector<DeviceActivity> activities_in(const std::vector<DeviceActivity>& activities,
                                          const std::vector<ProfileWindow>& windows);

// The model's FLOPs in one step on one rank (the paper's count, divided over the ranks as the
// metrics' TFLOP/s per GPU is): the attention scores and context products, and every other GEMM.
struct ModelWork {
  double gemm_flops = 0;
  double attention_flops = 0;
};
ModelWork model_work(const RunConfig& config, int world_size);

struct ProfileRow {
  KernelClass kind = KernelClass::Other;
  double busy_us = 0;   // summed over its launches, inside the windows
  int64_t launches = 0;
  double share = 0;     // busy_us over the steps' time
  double rate = 0;      // TFLOP/s or GB/s, 0 when unknown
  const char* unit = "";
  double of_peak = 0;   // rate over the device's peak, 0 when either is unknown
};

// Idle time between two neighbours on the device timeline (any stream): what ran last before
// the device fell idle and what ran next ("step start" / "step end" at a window's edge), summed
// over every such gap in the windows. Says where the host kept the device waiting.
struct IdleGap {
  std::string before, after;
  double us = 0;
  int64_t count = 0;
};

// One kernel (or copy, or memset) by name, over the profiled steps.
struct KernelTotal {
  std::string name;  // the start of its name (longer than the idle breakdown gives), then its class
  double us = 0;
  int64_t launches = 0;
};

struct ProfileReport {
  int steps = 0;
  double step_us = 0;       // the windows' time, summed
  double busy_us = 0;       // time any kernel, copy or memset ran (their union)
  double idle_share = 0;    // 1 - busy_us / step_us
  std::vector<ProfileRow> rows;  // by busy time, largest first; classes that never ran are left out
  std::vector<std::pair<std::string, double>> top_other;  // the largest unclassified kernels (us)
  std::vector<IdleGap> top_idle;  // the largest idle gaps by neighbours, largest first
  std::vector<KernelTotal> top_kernels;  // the kernels with the most time, largest first
  int samples = 0;
  double sm_clock_mean = 0, sm_clock_min = 0, sm_clock_max = 0;
  double power_mean = 0, power_max = 0;
  DevicePeaks peaks;
};

ProfileReport build_profile_report(const std::vector<DeviceActivity>& activities,
                                   const std::vector<DeviceSample>& samples, const std::vector<ProfileWindow>& windows,
                                   const ModelWork& work, const DevicePeaks& peaks);

// The report as text lines under a title ("rank 0 (pp 0, dp 0, tp 0)").
std::string format_profile_report(const ProfileReport& report, const std::string& title);

}  // namespace ptdp
