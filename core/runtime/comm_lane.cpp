#include "runtime/comm_lane.hpp"

#include <spdlog/spdlog.h>

namespace ptdp {

CommLane::CommLane(std::shared_ptr<Communicator> world, CommInit init, MakeGroup make_group, void* stream)
    : world_(std::move(world)), thread_([this] { run(); }) {
  post([this, init, make_group = std::move(make_group), stream] {
    world_->init(init);
    group_ = make_group(*world_);
    group_->bind_stream(stream);
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

CommLane::~CommLane() {
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
      spdlog::debug("communication lane of {} ended after a failure: {}", group_ ? group_->name() : "a group",
                    e.what());
    }
  }
}

uint64_t CommLane::post(std::function<void()> task) {
  uint64_t ticket;
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ticket = ++posted_count_;
  }
  posted_.notify_one();
  return ticket;
}

void CommLane::wait(uint64_t ticket) {
  std::unique_lock lock(mutex_);
  ran_.wait(lock, [this, ticket] { return ran_count_ >= ticket; });
  if (failure_) std::rethrow_exception(failure_);
}

bool CommLane::ran(uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return ran_count_ >= ticket;
}

void CommLane::wait_all() {
  uint64_t last;
  {
    std::lock_guard lock(mutex_);
    last = posted_count_;
  }
  wait(last);
}

void CommLane::abort(const std::string& reason) { world_->abort(reason); }

void CommLane::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    posted_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing is left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    // After a failure the communicator may be broken: what is left is dropped (counted as run),
    // and wait reports the first failure.
    if (!failure_) {
      lock.unlock();
      try {
        task();
        task = nullptr;  // what it holds is let go of here, before the waiting thread lets go of its own
      } catch (...) {
        task = nullptr;
        lock.lock();
        failure_ = std::current_exception();
        ++ran_count_;
        ran_.notify_all();
        continue;
      }
      lock.lock();
    }
    ++ran_count_;
    ran_.notify_all();
  }
}

}  // namespace ptdp
