#pragma once
// The real timeline of one rank (compute, transfers, collectives, optimizer) for the
// Chrome/Perfetto trace. Recording waits for the device around each span so that the span
// covers the work, which is why it is on only for the few traced steps. Under the device
// profiler it does not wait: the profiler's tracks show when the device worked, and the spans
// then show when the host issued each op, so that the trace shows where the device waited for
// the host (waits would make that idle time themselves).
//
// Spans come from up to three host threads: the computing one (the "ops" track), the
// data-parallel reduction lane's and the pipeline transfer lane's (a track each, comm_lane.hpp).
// A lane's spans never wait for the device: on the host its calls return when done, so a span
// covers the work; on a GPU it shows when the lane handed the work to the side stream, and the
// profiler's tracks show it run.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <ptdp/layer_kernels.hpp>

namespace ptdp {

// The host thread a span was recorded on, the trace's thread id.
enum class TimelineTrack : int { Ops = 0, ReductionLane = 1, TransferLane = 2 };

// One timed span on this rank, for the Chrome/Perfetto trace.
struct TimelineSpan {
  std::string name;      // "F3.1", "B0.0", "send/recv", "dp all-reduce", ...
  std::string category;  // "forward", "backward", "p2p", "collective", "optimizer"
  double start_us = 0, duration_us = 0;
  TimelineTrack track = TimelineTrack::Ops;
};

class TimelineRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TimelineRecorder(LayerKernels& kernels, bool wait_for_device = true)
      : kernels_(kernels), wait_for_device_(wait_for_device), origin_(Clock::now()) {}
  void set_enabled(bool on) { enabled_ = on; }
  // Times fn(); device work is waited for (when wait_for_device) so the span covers it.
  void span(const std::string& name, const std::string& category, const std::function<void()>& fn);
  // Times fn() on a lane's thread, without waiting for the device.
  void lane_span(const std::string& name, const std::string& category, const std::function<void()>& fn,
                 TimelineTrack track = TimelineTrack::ReductionLane);
  // Read once no lane task runs (after the step's flush).
  const std::vector<TimelineSpan>& spans() const { return spans_; }
  // Where the spans' time 0 lies, in microseconds of Clock's epoch (the device profiler's base).
  double origin_us() const { return std::chrono::duration<double, std::micro>(origin_.time_since_epoch()).count(); }

 private:
  // Appends the span from `start` to now.
  void record(const std::string& name, const std::string& category, Clock::time_point start, TimelineTrack track);

  LayerKernels& kernels_;
  bool wait_for_device_;
  Clock::time_point origin_;
  std::atomic<bool> enabled_ = false;
  std::mutex mutex_;  // spans_, appended to from both threads
  std::vector<TimelineSpan> spans_;
};

}  // namespace ptdp
