#pragma once
// OperationWatchdog: one thread per communicator that watches the NCCL operations in flight on
// the GPU and turns a hang into an error.
//
// NCCL kernels wait for their peers on the GPU; if a peer died, the kernel spins for ever and so
// does anything queued behind it on the stream. The watchdog times each tracked operation from
// the moment the GPU reached it (its `begin` event completed), not from when it was enqueued, so
// compute queued ahead of a collective never counts against the timeout. While operations are
// outstanding it also polls ncclCommGetAsyncError. On a timeout or an NCCL error it calls the
// failure handler once (the communicator aborts itself there, which makes the spinning kernels
// exit and the stream drain) and then stays quiet.
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ptdp/plugin_log.hpp"

namespace ptdp::comm_nccl {

class OperationWatchdog {
 public:
  // Asked while operations are outstanding: "" when healthy, else what NCCL reported.
  // May throw ptdp::CallError.
  using HealthCheck = std::function<std::string()>;
  // Called on the watchdog thread, at most once, with the complete failure text.
  using FailureHandler = std::function<void(const std::string& failure)>;

  // `log` hears, after `who`, of events that cannot be destroyed when the watchdog goes.
  OperationWatchdog(int device, double timeout_s, HealthCheck health, FailureHandler on_failure,
                    PluginLog log, std::string who);
  ~OperationWatchdog();
  OperationWatchdog(const OperationWatchdog&) = delete;
  OperationWatchdog& operator=(const OperationWatchdog&) = delete;

  // Events come from a pool the watchdog owns; a handle stays valid until the watchdog is gone.
  cudaEvent_t acquire_event();
  void release_event(cudaEvent_t event);
  // `begin` and `end` were recorded on the stream just before and just after the operation;
  // the watchdog owns them from here on.
  void track(std::string what, cudaEvent_t begin, cudaEvent_t end);
  // Drops every tracked operation: the communicator was aborted and they end without results.
  void forget_all();

 private:
  struct Operation {
    std::string what;
    cudaEvent_t begin;
    cudaEvent_t end;
    std::optional<std::chrono::steady_clock::time_point> started;  // first seen running on the GPU
  };

  void run();
  // Retires finished operations; returns the failure text, or "" while all is well.
  std::string inspect_locked();

  const int device_;
  const double timeout_s_;
  const std::chrono::duration<double> poll_interval_;
  const HealthCheck health_;
  const FailureHandler on_failure_;
  const PluginLog log_;
  const std::string who_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool reported_ = false;
  std::list<Operation> outstanding_;
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> all_events_;
  std::thread thread_;  // declared last: it starts once everything above exists
};

}  // namespace ptdp::comm_nccl
