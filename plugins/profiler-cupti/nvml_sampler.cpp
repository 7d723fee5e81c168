#include "nvml_sampler.hpp"

#include <dlfcn.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <utility>

#include <ptdp/plugin_log.hpp>

namespace ptdp::cupti {

namespace {
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // nvmlClockType_t NVML_CLOCK_SM
// NVML_FI_DEV_POWER_INSTANT: the board's power now. nvmlDeviceGetPowerUsage gives a trailing
// average over up to a second on recent GPUs, which for a step of 100 ms is mostly the steps
// before it.
constexpr unsigned kFieldPowerInstant = 186;
constexpr auto kInterval = std::chrono::milliseconds(5);

// nvml.h's nvmlFieldValue_t and nvmlValue_t, for the one field read.
union NvmlValue {
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  int si;
  unsigned short us;
};
struct NvmlFieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;  // nvmlValueType_t
  int result;      // nvmlReturn_t
  NvmlValue value;
};

// The field's value as a number, by nvmlValueType_t (0 double, 1 unsigned int, 2 unsigned long,
// 3 unsigned long long, 4 signed long long, 5 signed int, 6 unsigned short).
bool field_number(const NvmlFieldValue& f, double& out) {
  switch (f.value_type) {
    case 0: out = f.value.d; return true;
    case 1: out = f.value.ui; return true;
    case 2: out = double(f.value.ul); return true;
    case 3: out = double(f.value.ull); return true;
    case 4: out = double(f.value.sll); return true;
    case 5: out = f.value.si; return true;
    case 6: out = f.value.us; return true;
    default: return false;
  }
}
}  // namespace

// The few NVML entry points used, with the C signatures of nvml.h.
struct NvmlSampler::Api {
  void* library = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_pci_bus_id)(const char*, void**) = nullptr;
  int (*clock)(void*, int, unsigned*) = nullptr;
  int (*max_clock)(void*, int, unsigned*) = nullptr;
  int (*power_mw)(void*, unsigned*) = nullptr;
  int (*power_limit_mw)(void*, unsigned*) = nullptr;
  int (*field_values)(void*, int, NvmlFieldValue*) = nullptr;  // optional
};

NvmlSampler::NvmlSampler(const std::string& pci_bus_id) : api_(std::make_unique<Api>()) {
  api_->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!api_->library) {
    why_not_ = std::string("cannot open libnvidia-ml.so.1: ") + dlerror();
    return;
  }
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(api_->library, name));
    if (!fn && why_not_.empty()) why_not_ = std::string("libnvidia-ml.so.1 has no ") + name;
  };
  bind(api_->init, "nvmlInit_v2");
  bind(api_->shutdown, "nvmlShutdown");
  bind(api_->by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(api_->clock, "nvmlDeviceGetClockInfo");
  bind(api_->max_clock, "nvmlDeviceGetMaxClockInfo");
  bind(api_->power_mw, "nvmlDeviceGetPowerUsage");
  bind(api_->power_limit_mw, "nvmlDeviceGetEnforcedPowerLimit");
  if (!why_not_.empty()) return;
  api_->field_values = reinterpret_cast<decltype(api_->field_values)>(dlsym(api_->library, "nvmlDeviceGetFieldValues"));
  if (api_->init() != kNvmlSuccess) {
    why_not_ = "nvmlInit failed";
    return;
  }
  void* device = nullptr;
  if (api_->by_pci_bus_id(pci_bus_id.c_str(), &device) != kNvmlSuccess) {
    why_not_ = "NVML does not know the device at " + pci_bus_id;
    return;
  }
  device_ = device;
  double mw = 0;
  instant_power_ = instant_power_mw(mw);
}

bool NvmlSampler::instant_power_mw(double& mw) const {
  if (!api_->field_values) return false;
  NvmlFieldValue field{};
  field.field_id = kFieldPowerInstant;
  return api_->field_values(device_, 1, &field) == kNvmlSuccess && field.result == kNvmlSuccess &&
         field_number(field, mw);
}

NvmlSampler::~NvmlSampler() {
  stop();
  if (!api_->shutdown || !device_) return;
  // NVML is opened at run time, without its header: its results are plain numbers. The profiler
  // has no host log: standard error.
  const int result = api_->shutdown();
  if (result != kNvmlSuccess)
    PluginLog().write(LogLevel::Warn, "--profile: nvmlShutdown failed: NVML result " + std::to_string(result));
}

void NvmlSampler::start() {
  if (!device_ || sampling_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void NvmlSampler::stop() {
  if (!sampling_.exchange(false)) return;
  thread_.join();
}

void NvmlSampler::run() {
  while (sampling_) {
    unsigned mhz = 0;
    double mw = 0;
    bool ok = api_->clock(device_, kNvmlClockSm, &mhz) == kNvmlSuccess;
    if (ok && instant_power_) {
      ok = instant_power_mw(mw);
    } else if (ok) {
      unsigned average_mw = 0;
      ok = api_->power_mw(device_, &average_mw) == kNvmlSuccess;
      mw = average_mw;
    }
    if (ok) {
      const double now = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
      std::lock_guard lock(mutex_);
      samples_.push_back({now, double(mhz), mw / 1000.0});
    }
    std::this_thread::sleep_for(kInterval);
  }
}

std::vector<DeviceSample> NvmlSampler::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(samples_, {});
}

double NvmlSampler::max_sm_clock_mhz() const {
  unsigned mhz = 0;
  return device_ && api_->max_clock(device_, kNvmlClockSm, &mhz) == kNvmlSuccess ? double(mhz) : 0.0;
}

double NvmlSampler::power_limit_w() const {
  unsigned mw = 0;
  return device_ && api_->power_limit_mw(device_, &mw) == kNvmlSuccess ? mw / 1000.0 : 0.0;
}

}  // namespace ptdp::cupti
