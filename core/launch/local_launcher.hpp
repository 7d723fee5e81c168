#pragma once
// Starts the ranks of a single-node job as child processes and supervises them:
// `ptdp-host run m.toml` with launch.nproc_per_node = N runs N copies of itself through this.
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ptdp {

struct LaunchOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port (one node only)
  // A job over `nnodes` nodes, each running this launcher with nproc ranks: this one is node
  // `node_rank` and starts ranks node_rank · nproc .. (node_rank + 1) · nproc - 1. Node 0 holds
  // rank 0 and with it the rendezvous store, on master_addr:master_port; every node must be
  // given the job's secret (PTDP_RENDEZVOUS_SECRET or _FILE), since no node can hand it to the others.
  int nnodes = 1;
  int node_rank = 0;
  // After one rank fails (or the launcher is interrupted) the others get SIGTERM, and SIGKILL
  // once this has passed.
  std::chrono::milliseconds grace{5000};
  // Extra variables for every rank, on top of the launcher's own environment.
  std::vector<std::pair<std::string, std::string>> env;
  // Nonzero: the exit code with which a rank says it stopped cleanly on a stop signal (SIGTERM,
  // SIGUSR1, SIGINT). The launcher then forwards the first such signal to the ranks and waits for
  // them however long they take to save, without the grace period; a second one kills them at
  // once. The result is this code when every rank stopped that way. 0: every signal stops the
  // ranks as below.
  int stopped_by_signal_code = 0;
  // Receives the launcher's one-line reports ("rank 3 exited with status 1"); default: stderr.
  std::function<void(const std::string&)> report;
};

// Runs `argv` (argv[0] looked up in PATH; "/proc/self/exe" re-runs this program) as ranks
// 0..nproc-1 (of one node; see LaunchOptions::nnodes for several) with PTDP_RANK, PTDP_WORLD_SIZE, PTDP_LOCAL_RANK, PTDP_LOCAL_WORLD_SIZE,
// PTDP_MASTER_ADDR and PTDP_MASTER_PORT set, and waits for all of them.
// Output: rank 0 writes straight to the launcher's stdout and stderr (its progress reads as if
// it ran alone); the lines of the other ranks are prefixed "[rank N] ".
// The first rank to fail is reported, the others are terminated, and its status is returned
// (exit code, or 128 + signal). SIGINT / SIGTERM to the launcher are forwarded to the ranks and
// the result is 128 + that signal. 0 when every rank exits 0. Every child is reaped.
int launch_local_ranks(int nproc, const std::vector<std::string>& argv, const LaunchOptions& options);

}  // namespace ptdp
