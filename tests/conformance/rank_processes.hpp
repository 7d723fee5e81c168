#pragma once
// Runs a test body as every rank of a small job: one forked process per rank, each with its
// own rendezvous store client (rank 0 serves it), so communicators are tested across real
// process boundaries. A rank reports failure by throwing; a rank that hangs is killed.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace ptdp::conformance {

struct RankOutcome {
  int rank = 0;
  bool finished = false;  // exited (as opposed to killed for running too long)
  int exit_code = -1;     // 128 + signal when killed
  std::string error;      // what the rank threw; empty on success
  double seconds = 0;     // from start until the rank's body returned or threw
};

// Runs body(rank) in `world` processes and waits at most `limit`. The body's exception text is
// the rank's error. A body may end its process early (e.g. _exit) to simulate a crash.
std::vector<RankOutcome> run_ranks(int world, std::chrono::seconds limit, const std::function<void(int rank)>& body);

// One line per failed rank, for test messages.
std::string describe(const std::vector<RankOutcome>& outcomes);

}  // namespace ptdp::conformance
