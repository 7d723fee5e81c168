// The launch table where another launcher started the job, and ptdp-host's own launcher across
// nodes: what `run` and `validate` say before any rank trains.
#include <gtest/gtest.h>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

// torchrun's variables for rank 0 of a world of 4 on this node; the store port is never reached
// by validate.
const std::string kTorchrunRank0 = "RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=29990 ";

TEST(LaunchTable, ValidateUnderALauncherJudgesItsWorldAsRunDoes) {
  TinyGptWorkspace ws;
  // The manifest's table says 1 rank; torchrun's world is 4, which p 1 * t 2 * d 2 fills.
  const CommandResult fits = run_shell(kTorchrunRank0 + PTDP_TEST_HOST " validate " + ws.manifest() +
                                       " --set parallel.tensor=2 --set parallel.data=2");
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_NE(fits.output.find("note         launch.nproc_per_node and nnodes (nproc_per_node (1) * nnodes (1) = 1) are "
                             "ignored: torchrun started 4 ranks, and its world is the job's"),
            std::string::npos)
      << fits.output;
  const CommandResult short_of_it = run_shell(kTorchrunRank0 + PTDP_TEST_HOST " validate " + ws.manifest() +
                                              " --set parallel.tensor=2 --set parallel.data=1");
  EXPECT_EQ(short_of_it.exit_code, 2) << short_of_it.output;
  EXPECT_NE(short_of_it.output.find("pipeline (1) * tensor (2) * data (1) = 2 must equal the world size 4 that "
                                    "torchrun reports"),
            std::string::npos)
      << short_of_it.output;
}

TEST(LaunchTable, SeveralNodesNeedAnAddressTheOtherNodesReachAndANodeRankInRange) {
  TinyGptWorkspace ws;
  const HostRun loopback = ws.run({"launch.nnodes=2", "launch.master_port=29991"}, 1);
  EXPECT_NE(loopback.exit_code, 0);
  EXPECT_NE(loopback.output.find("launch.nnodes = 2 with launch.master_addr = \"127.0.0.1\": the other nodes cannot "
                                 "reach a loopback address"),
            std::string::npos)
      << loopback.output;
  const HostRun outside = ws.run({"launch.nnodes=2"}, 1, "--node-rank 2");
  EXPECT_NE(outside.exit_code, 0);
  EXPECT_NE(outside.output.find("--node-rank 2: outside launch.nnodes = 2 (nodes 0 to 1)"), std::string::npos)
      << outside.output;
}

}  // namespace
}  // namespace ptdp::test
