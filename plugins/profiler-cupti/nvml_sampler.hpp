#pragma once
// The SM clock and power of one GPU, read through NVML every few milliseconds on a thread of its
// own while recording: the instantaneous power where the driver has the field, else NVML's
// trailing average. NVML is opened at run time (libnvidia-ml.so.1, the driver's), so a machine
// without it still profiles kernels; it then has no samples and says why.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ptdp/device_profiler.hpp>

namespace ptdp::cupti {

class NvmlSampler {
 public:
  // pci_bus_id: the CUDA device's ("0000:19:00.0"), which NVML's numbering need not share.
  explicit NvmlSampler(const std::string& pci_bus_id);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& why_not() const { return why_not_; }
  void start();
  void stop();
  std::vector<DeviceSample> take();
  double max_sm_clock_mhz() const;
  double power_limit_w() const;

 private:
  struct Api;
  void run();
  bool instant_power_mw(double& mw) const;

  std::unique_ptr<Api> api_;
  void* device_ = nullptr;  // nvmlDevice_t
  std::string why_not_;
  bool instant_power_ = false;  // NVML_FI_DEV_POWER_INSTANT reads; else the trailing average
  std::atomic<bool> sampling_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<DeviceSample> samples_;
};

}  // namespace ptdp::cupti
