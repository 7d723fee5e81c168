// The device profiler for `run --profile`: CUPTI's activity records of every kernel, copy and
// memset of this process on its device, timed on the host's steady clock (CUPTI asks us for its
// timestamps), and NVML's SM clock and power meanwhile.
#include <cupti.h>
#include <cuda_runtime.h>
#include <cxxabi.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <ptdp/checked_call_cuda.hpp>
#include <ptdp/checked_call_cupti.hpp>
#include <ptdp/device_profiler.hpp>
#include <ptdp/error.hpp>
#include <ptdp/plugin.hpp>
#include <ptdp/plugin_log.hpp>

#include "device_peaks.hpp"
#include "nvml_sampler.hpp"

namespace ptdp::cupti {
namespace {

uint64_t CUPTIAPI steady_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string demangled(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && text ? text : name;
  std::free(text);
  return out;
}

const char* copy_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "copy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "copy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "copy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "copy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "copy PtoP";
    default: return "copy";
  }
}

// CUPTI hands completed record buffers to process-wide callbacks; they land here, kept for the
// one device this process profiles.
struct Records {
  std::mutex mutex;
  std::vector<DeviceActivity> activities;
  uint32_t device = 0;
  bool taken = false;  // a profiler exists in this process
  // Added to CUPTI's timestamps to put them on the steady clock: 0 when CUPTI takes its
  // timestamps from steady_ns, else the two clocks' difference measured at the start.
  int64_t offset_ns = 0;
};
Records& records() {
  static Records r;
  return r;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = size_t(8) << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = *buffer ? kBytes : 0;
  *max_records = 0;
}

DeviceActivity timed(DeviceActivity a, uint64_t start, uint64_t end) {
  a.start_us = static_cast<double>(static_cast<int64_t>(start) + records().offset_ns) / 1e3;
  a.duration_us = end > start ? static_cast<double>(end - start) / 1e3 : 0.0;
  return a;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<DeviceActivity> got;
  const uint32_t device = records().device;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    DeviceActivity a;
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (k->deviceId != device) continue;
      a.kind = DeviceActivity::Kind::Kernel;
      a.name = demangled(k->name);
      a.stream = k->streamId;
      got.push_back(timed(std::move(a), k->start, k->end));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      if (m->deviceId != device) continue;
      a.kind = DeviceActivity::Kind::Copy;
      a.name = copy_name(m->copyKind);
      a.stream = m->streamId;
      a.bytes = m->bytes;
      got.push_back(timed(std::move(a), m->start, m->end));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      if (m->deviceId != device) continue;
      a.kind = DeviceActivity::Kind::Memset;
      a.name = "memset";
      a.stream = m->streamId;
      a.bytes = m->bytes;
      got.push_back(timed(std::move(a), m->start, m->end));
    }
  }
  std::free(buffer);
  std::lock_guard lock(records().mutex);
  auto& all = records().activities;
  all.insert(all.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

class CuptiProfiler final : public DeviceProfiler {
 public:
  explicit CuptiProfiler(const PluginContext&) {}

  void open(int device_index) override {
    {
      std::lock_guard lock(records().mutex);
      if (records().taken) throw Error("--profile: this process already has a device profiler");
      records().taken = true;
      records().device = static_cast<uint32_t>(device_index);
    }
    opened_ = true;
    cudaDeviceProp prop{};
    PTDP_CALL(cudaGetDeviceProperties(&prop, device_index));
    char bus[64] = {};
    PTDP_CALL(cudaDeviceGetPCIBusId(bus, sizeof bus, device_index));
    nvml_ = std::make_unique<NvmlSampler>(bus);
    peaks_.device = prop.name;
    const DatasheetPeaks sheet = datasheet_peaks(prop.name);
    peaks_.bf16_tflops = sheet.bf16_tflops;
    peaks_.memory_gbs = sheet.memory_gbs;
    peaks_.source = sheet.bf16_tflops > 0 ? "datasheet, dense bf16" : "";
    peaks_.max_sm_clock_mhz = nvml_->max_sm_clock_mhz();
    peaks_.power_limit_w = nvml_->power_limit_w();
    // Timestamps from the host's steady clock, registered before any activity is enabled; where
    // CUPTI refuses the callback, its own clock, moved by the difference between the two.
    if (cuptiActivityRegisterTimestampCallback(steady_ns) != CUPTI_SUCCESS) {
      uint64_t cupti_ns = 0;
      PTDP_CALL(cuptiGetTimestamp(&cupti_ns));
      records().offset_ns = static_cast<int64_t>(steady_ns()) - static_cast<int64_t>(cupti_ns);
    }
    PTDP_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  }

  ~CuptiProfiler() override {
    if (recording_) {
      TeardownFailures failures;
      for (CUpti_ActivityKind kind : kKinds) PTDP_TEARDOWN_CALL(failures, cuptiActivityDisable(kind));
      PTDP_TEARDOWN_CALL(failures, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      // The profiler has no host log: standard error.
      PluginLog().write_failures("--profile: stopping the recording", failures);
    }
    if (!opened_) return;
    std::lock_guard lock(records().mutex);
    records().taken = false;
  }

  void start() override {
    if (recording_) return;
    for (CUpti_ActivityKind kind : kKinds) PTDP_CALL(cuptiActivityEnable(kind));
    nvml_->start();
    recording_ = true;
  }

  void stop() override {
    if (!recording_) return;
    nvml_->stop();
    // The caller waited for the device, so every record is complete; forcing hands over the
    // buffers that are not full yet.
    PTDP_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (CUpti_ActivityKind kind : kKinds) PTDP_CALL(cuptiActivityDisable(kind));
    recording_ = false;
  }

  std::vector<DeviceActivity> take_activities() override {
    std::lock_guard lock(records().mutex);
    return std::exchange(records().activities, {});
  }

  std::vector<DeviceSample> take_samples() override { return nvml_->take(); }

  DevicePeaks peaks() const override { return peaks_; }

 private:
  std::unique_ptr<NvmlSampler> nvml_;
  DevicePeaks peaks_;
  bool opened_ = false;  // this object holds the process's CUPTI records
  bool recording_ = false;
};

}  // namespace
}  // namespace ptdp::cupti

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::DeviceProfiler, ptdp::DeviceProfiler, ptdp::cupti::CuptiProfiler,
                      "profiler-cupti", "1.0.0")
