// The example communicator trains: the tiny GPT over examples/comm-local, built out of tree
// (examples.comm_local.build), gives the losses of one rank over the stock communicator within
// the layout tests' tolerance, at (p, t, d) = (2, 1, 2), and at (2, 2, 2) with scatter/gather and
// the distributed optimizer, which reduce-scatters and all-gathers the gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "host_run.hpp"
#include "layout.hpp"

namespace ptdp::test {
namespace {

TEST(CommLocalExample, TrainsWithTheLossesOfOneRank) {
  const TinyGptWorkspace workspace;
  const HostRun baseline = workspace.run({}, 1);
  ASSERT_EQ(baseline.exit_code, 0) << baseline.output;
  ASSERT_EQ(baseline.losses.size(), 5u) << baseline.output;

  const struct {
    Layout layout;
    bool distributed_optimizer;
  } runs[] = {{Layout{2, 1, 2, 1, false, false}, false}, {Layout{2, 2, 2, 1, true, false}, true}};
  for (const auto& [layout, distributed_optimizer] : runs) {
    std::vector<std::string> sets = layout.sets();
    sets.push_back(std::string("plugins.communicator=\"") + COMM_LOCAL_PLUGIN + "\"");
    sets.push_back(std::string("parallel.distributed_optimizer=") + (distributed_optimizer ? "true" : "false"));
    const HostRun run = workspace.run(sets, layout.ranks());
    ASSERT_EQ(run.exit_code, 0) << layout.name() << ":\n" << run.output;
    ASSERT_EQ(run.losses.size(), baseline.losses.size()) << run.output;
    for (size_t i = 0; i < run.losses.size(); ++i)
      EXPECT_NEAR(run.losses[i], baseline.losses[i], 1e-5 * std::abs(baseline.losses[i]))
          << "step " << i + 1 << " of " << layout.name();
  }
}

}  // namespace
}  // namespace ptdp::test
