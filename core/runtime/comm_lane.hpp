#pragma once
// Where communication runs beside the computing thread: a communicator of its own (another
// instance of the run's communicator plugin, split into one of this rank's groups), called from
// a host thread of its own, in the order tasks are posted. Two lanes use it: the data-parallel
// gradient reduction (the data-parallel group, on the kernels' side stream) and the pipeline
// transfers posted ahead of the compute that waits for them (the pipeline group, on the host).
//
// Why its own everything: a host-memory call returns only when it is done, so on the computing
// thread it would stop the compute; a communicator is not made to be called from two threads at
// once, so the lane's thread has one to itself; and on a GPU the side stream lets the reduction's
// kernels and copies run while the compute stream goes on. For the reduction the computing thread
// orders the streams (LayerKernels::side_waits_for_compute before it posts,
// compute_waits_for_side after wait_all), so what the lane runs sees final gradients and the step
// after it sees the sums.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <ptdp/communicator.hpp>

namespace ptdp {

class CommLane {
 public:
  // Makes the lane's group from its own world communicator; collective over the world.
  using MakeGroup = std::function<std::shared_ptr<Communicator>(Communicator& world)>;

  // Initializes `world` on the lane's thread (so that a CUDA communicator makes the device
  // current there), makes the group and binds it to `stream`. `init` is the world's own CommInit
  // but for its key prefix. Collective over the world; returns when done, or throws what failed.
  CommLane(std::shared_ptr<Communicator> world, CommInit init, MakeGroup make_group, void* stream);
  // Runs what was posted (a failure is logged, not thrown), then ends the thread.
  ~CommLane();
  CommLane(const CommLane&) = delete;
  CommLane& operator=(const CommLane&) = delete;

  // The lane's group: only tasks may call it.
  Communicator& group() { return *group_; }
  // Runs `task` on the lane's thread after every task posted before it; returns the task's
  // ticket for wait().
  uint64_t post(std::function<void()> task);
  // Returns once the task of `ticket` and every one posted before it have run. After a task
  // threw, the lane skips the rest and this rethrows that failure.
  void wait(uint64_t ticket);
  // Whether the task of `ticket` has run (or been dropped after a failure), without waiting.
  bool ran(uint64_t ticket);
  // wait() for every task posted so far.
  void wait_all();
  // Aborts the lane's communicator (another part of the job failed), so that a task blocked in a
  // call returns. Safe from any thread.
  void abort(const std::string& reason);

 private:
  void run();

  std::shared_ptr<Communicator> world_;
  std::shared_ptr<Communicator> group_;
  std::mutex mutex_;
  std::condition_variable posted_, ran_;
  std::deque<std::function<void()>> tasks_;
  uint64_t posted_count_ = 0, ran_count_ = 0;  // tickets are 1, 2, ...: ran_count_ is the last one run
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace ptdp
