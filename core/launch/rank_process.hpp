#pragma once
// Starting one rank of a local job: a child process of the launcher with the rank's environment,
// that dies with the launcher.
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "launch/forwarded_output.hpp"

namespace ptdp {

// What every rank of the job is started with.
struct RankCommand {
  std::vector<std::string> argv;  // argv[0] looked up in PATH
  int nproc = 1;  // ranks on this node
  // A job over several nodes: this node holds ranks first_rank .. first_rank + nproc - 1 of
  // world_size (0 means nproc: a one-node job).
  int first_rank = 0;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::string secret;  // the job's rendezvous secret; empty when the ranks already have one
  std::vector<std::pair<std::string, std::string>> env;  // on top of the launcher's environment
};

struct RankProcess {
  pid_t pid = -1;
  // Rank 0 writes straight to the launcher's stdout and stderr; the others' output comes back
  // through these, prefixed "[rank N] ".
  std::vector<ForwardedOutput> output;
};

// Forks and executes the node's rank `local_rank` (the job's rank first_rank + local_rank) with
// PTDP_RANK, PTDP_WORLD_SIZE, PTDP_LOCAL_RANK, PTDP_LOCAL_WORLD_SIZE, PTDP_MASTER_ADDR and
// PTDP_MASTER_PORT set. Throws ptdp::Error "cannot start rank N: <call>: <reason>" when it cannot.
RankProcess start_rank(int local_rank, const RankCommand& command);

}  // namespace ptdp
