#include "runtime/reduction_lane.hpp"

#include <spdlog/spdlog.h>

namespace ptdp {

ReductionLane::ReductionLane(std::shared_ptr<Communicator> world, CommInit init, const Topology& topology,
                             LayerKernels& kernels)
    : world_(std::move(world)), thread_([this] { run(); }) {
  void* side = kernels.side_stream();
  post([this, init, &topology, side] {
    world_->init(init);
    data_ = split_data_group(*world_, topology);
    data_->bind_stream(side);
  });
  try {
    wait_all();
  } catch (...) {
    // The destructor does not run for an object whose constructor threw.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    posted_.notify_one();
    thread_.join();
    throw;
  }
}

ReductionLane::~ReductionLane() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  posted_.notify_one();
  thread_.join();
  if (failure_) {
    try {
      std::rethrow_exception(failure_);
    } catch (const std::exception& e) {
      spdlog::debug("data-parallel reduction lane ended after a failure: {}", e.what());
    }
  }
}

void ReductionLane::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  posted_.notify_one();
}

void ReductionLane::wait_all() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return tasks_.empty() && !busy_; });
  if (failure_) std::rethrow_exception(failure_);
}

void ReductionLane::abort(const std::string& reason) { world_->abort(reason); }

void ReductionLane::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    posted_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing is left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    // After a failure the communicator may be broken: what is left is dropped, and wait_all
    // reports the first failure.
    if (!failure_) {
      busy_ = true;
      lock.unlock();
      try {
        task();
      } catch (...) {
        lock.lock();
        failure_ = std::current_exception();
        busy_ = false;
        if (tasks_.empty()) drained_.notify_all();
        continue;
      }
      lock.lock();
      busy_ = false;
    }
    if (tasks_.empty()) drained_.notify_all();
  }
}

}  // namespace ptdp
