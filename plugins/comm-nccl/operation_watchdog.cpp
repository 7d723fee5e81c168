#include "operation_watchdog.hpp"

#include <algorithm>
#include <cstdio>

#include "nccl_check.hpp"

namespace ptdp::comm_nccl {

std::string timeout_failure(const std::string& what, double timeout_s) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
  return what + " timed out after " + seconds + " s (a peer may have died)";
}

OperationWatchdog::OperationWatchdog(int device, double timeout_s, HealthCheck health,
                                     FailureHandler on_failure)
    : device_(device),
      timeout_s_(timeout_s),
      // Fine enough to notice a timeout within a tenth of it, coarse enough to cost nothing.
      poll_interval_(std::clamp(timeout_s / 10.0, 0.001, 0.1)),
      health_(std::move(health)),
      on_failure_(std::move(on_failure)),
      thread_([this] { run(); }) {}

OperationWatchdog::~OperationWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Events still pending on a stream may be destroyed: CUDA releases them once they complete.
  // Nothing is left to do if one cannot be destroyed, so the failure text is dropped.
  for (cudaEvent_t event : all_events_) (void)CUDA_REPORT(cudaEventDestroy(event));
}

cudaEvent_t OperationWatchdog::acquire_event() {
  std::lock_guard lock(mutex_);
  if (!free_events_.empty()) {
    cudaEvent_t event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  all_events_.push_back(event);
  return event;
}

void OperationWatchdog::release_event(cudaEvent_t event) {
  std::lock_guard lock(mutex_);
  free_events_.push_back(event);
}

void OperationWatchdog::track(std::string what, cudaEvent_t begin, cudaEvent_t end) {
  {
    std::lock_guard lock(mutex_);
    outstanding_.push_back(Operation{std::move(what), begin, end, std::nullopt});
  }
  wake_.notify_one();
}

void OperationWatchdog::forget_all() {
  std::lock_guard lock(mutex_);
  for (const Operation& op : outstanding_) {
    free_events_.push_back(op.begin);
    free_events_.push_back(op.end);
  }
  outstanding_.clear();
}

std::string OperationWatchdog::inspect_locked() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = outstanding_.begin(); it != outstanding_.end();) {
    try {
      if (CUDA_QUERY(cudaEventQuery(it->end))) {
        free_events_.push_back(it->begin);
        free_events_.push_back(it->end);
        it = outstanding_.erase(it);
        continue;
      }
      if (!it->started && CUDA_QUERY(cudaEventQuery(it->begin))) it->started = now;
    } catch (const CallFailure& e) {
      return it->what + ": " + e.what();
    }
    if (it->started && std::chrono::duration<double>(now - *it->started).count() > timeout_s_)
      return timeout_failure(it->what, timeout_s_);
    ++it;
  }
  return {};
}

void OperationWatchdog::run() {
  // CUDA's current device is per thread; the events belong to the communicator's device.
  std::string failure = CUDA_REPORT(cudaSetDevice(device_));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (failure.empty()) {
      if (reported_ || outstanding_.empty()) {
        wake_.wait(lock);
        continue;
      }
      wake_.wait_for(lock, poll_interval_);
      if (stopping_) break;
      failure = inspect_locked();
      if (failure.empty() && !outstanding_.empty()) {
        const std::string oldest = outstanding_.front().what;
        lock.unlock();
        try {
          const std::string problem = health_();
          if (!problem.empty()) failure = oldest + ": " + problem;
        } catch (const CallFailure& e) {
          failure = oldest + ": " + e.what();
        }
        lock.lock();
      }
    }
    if (!failure.empty()) {
      reported_ = true;
      lock.unlock();
      on_failure_(failure);
      lock.lock();
      failure.clear();
    }
  }
}

}  // namespace ptdp::comm_nccl
