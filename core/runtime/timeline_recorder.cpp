#include "runtime/timeline_recorder.hpp"

namespace ptdp {

void TimelineRecorder::span(const std::string& name, const std::string& category, const std::function<void()>& fn) {
  if (!enabled_) {
    fn();
    return;
  }
  if (wait_for_device_) kernels_.synchronize();
  const auto start = Clock::now();
  fn();
  if (wait_for_device_) kernels_.synchronize();
  record(name, category, start, TimelineTrack::Ops);
}

void TimelineRecorder::lane_span(const std::string& name, const std::string& category, const std::function<void()>& fn,
                                 TimelineTrack track) {
  if (!enabled_) {
    fn();
    return;
  }
  const auto start = Clock::now();
  fn();
  record(name, category, start, track);
}

void TimelineRecorder::record(const std::string& name, const std::string& category, Clock::time_point start,
                              TimelineTrack track) {
  const auto end = Clock::now();
  using us = std::chrono::duration<double, std::micro>;
  std::lock_guard lock(mutex_);
  spans_.push_back({name, category, us(start - origin_).count(), us(end - start).count(), track});
}

}  // namespace ptdp
