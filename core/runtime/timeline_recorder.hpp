#pragma once
// The real timeline of one rank (compute, transfers, collectives, optimizer) for the
// Chrome/Perfetto trace. Recording waits for the device around each span so that the span
// covers the work, which is why it is on only for the few traced steps. Under the device
// profiler it does not wait: the profiler's tracks show when the device worked, and the spans
// then show when the host issued each op, so that the trace shows where the device waited for
// the host (waits would make that idle time themselves).
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <ptdp/layer_kernels.hpp>

namespace ptdp {

// One timed span on this rank, for the Chrome/Perfetto trace.
struct TimelineSpan {
  std::string name;      // "F3.1", "B0.0", "send/recv", "dp all-reduce", ...
  std::string category;  // "forward", "backward", "p2p", "collective", "optimizer"
  double start_us = 0, duration_us = 0;
};

class TimelineRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TimelineRecorder(LayerKernels& kernels, bool wait_for_device = true)
      : kernels_(kernels), wait_for_device_(wait_for_device), origin_(Clock::now()) {}
  void set_enabled(bool on) { enabled_ = on; }
  // Times fn(); device work is waited for (when wait_for_device) so the span covers it.
  void span(const std::string& name, const std::string& category, const std::function<void()>& fn);
  const std::vector<TimelineSpan>& spans() const { return spans_; }
  // Where the spans' time 0 lies, in microseconds of Clock's epoch (the device profiler's base).
  double origin_us() const { return std::chrono::duration<double, std::micro>(origin_.time_since_epoch()).count(); }

 private:
  LayerKernels& kernels_;
  bool wait_for_device_;
  Clock::time_point origin_;
  bool enabled_ = false;
  std::vector<TimelineSpan> spans_;
};

}  // namespace ptdp
