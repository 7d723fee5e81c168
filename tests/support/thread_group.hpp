#pragma once
// An in-process ptdp::Communicator for tests: the N ranks of a group are threads of one process.
// It keeps the Communicator contract on host memory: collectives are matched by call order (a
// rank calling a different collective, dtype or size is reported, not silently mixed up),
// reductions run in rank order so every rank gets bit-identical results, send/recv inside
// group_start/group_end are posted together, split makes real subgroups, and abort or a timeout
// makes every waiting call throw ptdp::Error naming the group, the rank and the operation.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ptdp/communicator.hpp>

namespace ptdp::test {

struct ThreadGroupState;

class ThreadGroup {
 public:
  explicit ThreadGroup(int size, std::string name = "world", double timeout_s = 30.0);

  int size() const { return static_cast<int>(ranks_.size()); }
  // The communicator rank `r` uses (from its own thread).
  Communicator* rank(int r) const;
  std::shared_ptr<Communicator> shared_rank(int r) const;
  // Makes every pending and later call on this group and the groups split from it fail.
  void abort(const std::string& reason);

 private:
  std::shared_ptr<ThreadGroupState> state_;
  std::vector<std::shared_ptr<Communicator>> ranks_;
};

// Runs fn(rank) for every rank of `group` on its own thread and joins them. The first failure
// aborts the group (so the other ranks stop waiting) and is rethrown here.
void run_ranks(ThreadGroup& group, const std::function<void(int rank)>& fn);

}  // namespace ptdp::test
