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
  const auto end = Clock::now();
  using us = std::chrono::duration<double, std::micro>;
  spans_.push_back({name, category, us(start - origin_).count(), us(end - start).count()});
}

}  // namespace ptdp
