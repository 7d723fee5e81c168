// A manifest that still names the communicator plugins.comm trains, and the warning naming
// plugins.communicator is said once for the job, not by every rank.
#include <gtest/gtest.h>

#include <string>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

TEST(CommunicatorSlot, TheOldKeysWarningIsSaidOncePerJob) {
  TinyGptWorkspace ws;  // its manifest names no communicator, so the old key is the only one
  const HostRun run = ws.run({"plugins.comm=comm-ucx", "run.steps=1"}, 2);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string warning = "--set plugins.comm=comm-ucx: plugins.comm is deprecated: write plugins.communicator";
  ASSERT_NE(run.output.find(warning), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(warning), run.output.rfind(warning)) << "said more than once:\n" << run.output;
}

}  // namespace
}  // namespace ptdp::test
