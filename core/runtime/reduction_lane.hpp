#pragma once
// Where the data-parallel gradient reduction runs beside the backward: a communicator of its own
// (a second instance of the run's communicator plugin, split into this rank's data-parallel
// group), called from a host thread of its own, on the kernels' side stream.
//
// Why its own everything: a host-memory collective returns only when it is done, so on the
// computing thread it would stop the backward; a communicator is not made to be called from two
// threads at once, so the lane's thread has one to itself; and on a GPU the side stream lets the
// reduction's kernels and copies run while the compute stream goes on. The computing thread
// orders the streams (LayerKernels::side_waits_for_compute before it posts, compute_waits_for_side
// after wait_all), so what the lane runs sees final gradients and the step after it sees the sums.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <ptdp/communicator.hpp>
#include <ptdp/layer_kernels.hpp>

#include "runtime/topology.hpp"

namespace ptdp {

class ReductionLane {
 public:
  // Initializes `world` on the lane's thread (so that a CUDA communicator makes the device
  // current there), splits out the data-parallel group and binds it to the side stream. `init`
  // is the world's own CommInit but for its key prefix. Collective over the world; returns when
  // done, or throws what failed.
  ReductionLane(std::shared_ptr<Communicator> world, CommInit init, const Topology& topology, LayerKernels& kernels);
  // Runs what was posted (a failure is logged, not thrown), then ends the thread.
  ~ReductionLane();
  ReductionLane(const ReductionLane&) = delete;
  ReductionLane& operator=(const ReductionLane&) = delete;

  // The data-parallel group on the lane's communicator: only tasks may call it.
  Communicator& data() { return *data_; }
  // Runs `task` on the lane's thread after every task posted before it.
  void post(std::function<void()> task);
  // Returns once every task posted so far has run. After a task threw, the lane skips the rest
  // and this rethrows that failure.
  void wait_all();
  // Aborts the lane's communicator (another part of the job failed), so that a task blocked in a
  // collective returns. Safe from any thread.
  void abort(const std::string& reason);

 private:
  void run();

  std::shared_ptr<Communicator> world_;
  std::shared_ptr<Communicator> data_;
  std::mutex mutex_;
  std::condition_variable posted_, drained_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false, stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace ptdp
