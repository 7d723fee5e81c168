#include "operation_watchdog.hpp"

#include <algorithm>

#include "nccl_wait.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::comm_nccl {

OperationWatchdog::OperationWatchdog(int device, double timeout_s, HealthCheck health,
                                     FailureHandler on_failure, PluginLog log, std::string who)
    : device_(device),
      timeout_s_(timeout_s),
      // Fine enough to notice a timeout within a tenth of it, coarse enough to cost nothing.
      poll_interval_(std::clamp(timeout_s / 10.0, 0.001, 0.1)),
      health_(std::move(health)),
      on_failure_(std::move(on_failure)),
      log_(std::move(log)),
      who_(std::move(who)),
      thread_([this] { run(); }) {}

OperationWatchdog::~OperationWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Events still pending on a stream may be destroyed: CUDA releases them once they complete.
  TeardownFailures failures;
  for (cudaEvent_t event : all_events_) PTDP_TEARDOWN_CALL(failures, cudaEventDestroy(event));
  log_.write_failures(who_ + "destroying the watchdog's events", failures);
}

cudaEvent_t OperationWatchdog::acquire_event() {
  std::lock_guard lock(mutex_);
  if (!free_events_.empty()) {
    cudaEvent_t event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  cudaEvent_t event = nullptr;
  PTDP_CALL(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
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
      if (PTDP_CUDA_QUERY(cudaEventQuery(it->end))) {
        free_events_.push_back(it->begin);
        free_events_.push_back(it->end);
        it = outstanding_.erase(it);
        continue;
      }
      if (!it->started && PTDP_CUDA_QUERY(cudaEventQuery(it->begin))) it->started = now;
    } catch (const CallError& e) {
      return it->what + ": " + e.detail();
    }
    if (it->started && std::chrono::duration<double>(now - *it->started).count() > timeout_s_)
      return timeout_failure(it->what, timeout_s_);
    ++it;
  }
  return {};
}

void OperationWatchdog::run() {
  // CUDA's current device is per thread; the events belong to the communicator's device.
  std::string failure;
  try {
    PTDP_CALL(cudaSetDevice(device_));
  } catch (const CallError& e) {
    failure = e.detail();
  }
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
        } catch (const CallError& e) {
          failure = oldest + ": " + e.detail();
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
