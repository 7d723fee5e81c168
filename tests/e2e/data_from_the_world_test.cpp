// A manifest that leaves parallel.data out trains on as many ranks as it is started with: d is the
// world size over pipeline * tensor, whether ptdp-host starts the ranks or another launcher does,
// and every such world trains the model of one rank. A world that pipeline * tensor does not
// divide is refused in one line before any rank starts.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

void expect_same_losses(const HostRun& run, const HostRun& one_rank, const std::string& what) {
  ASSERT_EQ(run.losses.size(), one_rank.losses.size()) << what << "\n" << run.output;
  for (size_t i = 0; i < run.losses.size(); ++i)
    EXPECT_NEAR(run.losses[i], one_rank.losses[i], 1e-5 * std::abs(one_rank.losses[i])) << "step " << i + 1 << ", "
                                                                                        << what;
}

class DataFromTheWorld : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    workspace_ = new TinyGptWorkspace();  // its manifest leaves parallel.data out
    one_rank_ = new HostRun(workspace_->run({}, 1));
  }
  static void TearDownTestSuite() {
    delete one_rank_;
    delete workspace_;
  }
  static TinyGptWorkspace* workspace_;
  static HostRun* one_rank_;
};
TinyGptWorkspace* DataFromTheWorld::workspace_ = nullptr;
HostRun* DataFromTheWorld::one_rank_ = nullptr;

TEST_F(DataFromTheWorld, OurLaunchersRanksAreTheDataParallelReplicas) {
  ASSERT_EQ(one_rank_->exit_code, 0) << one_rank_->output;
  for (const int ranks : {2, 4}) {
    const HostRun run = workspace_->run({}, ranks);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const std::string started = "starting " + std::to_string(ranks) + " ranks (p=1 t=1 d=" + std::to_string(ranks);
    EXPECT_NE(run.output.find(started), std::string::npos) << run.output;
    expect_same_losses(run, *one_rank_, std::to_string(ranks) + " ranks");
  }
}

TEST_F(DataFromTheWorld, AnExternalLaunchersWorldDecidesIt) {
  // The manifest's launch table says one process; srun starts 2, with pipeline 1 and tensor 1.
  const std::string metrics = workspace_->dir() + "/srun.jsonl";
  const HostRun run = host_run_result(run_shell(std::string(PTDP_TEST_DATA_DIR) + "/local_srun.sh 2 " +
                                                PTDP_TEST_HOST + " run " + workspace_->manifest() + " --metrics " +
                                                metrics),
                                      metrics);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  expect_same_losses(run, *one_rank_, "2 ranks under srun");
}

TEST_F(DataFromTheWorld, AWorldThatPipelineTimesTensorDoesNotDivideIsRefusedOnce) {
  const HostRun run = workspace_->run({"parallel.pipeline=2"}, 3);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  const std::string reason = "launch.nproc_per_node: parallel.data is left out, so it is the world size over pipeline "
                             "* tensor, but pipeline (2) * tensor (1) = 2 does not divide the world size "
                             "nproc_per_node (3) * nnodes (1) = 3";
  ASSERT_NE(run.output.find(reason), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find(reason), run.output.rfind(reason)) << "reported more than once:\n" << run.output;
  EXPECT_EQ(run.output.find("starting"), std::string::npos) << "ranks were started:\n" << run.output;
}

TEST_F(DataFromTheWorld, ValidateAndPlanSayWhereItCameFrom) {
  const std::string note = "parallel.data = 4: the manifest leaves it out, so it is the world size nproc_per_node (8) "
                           "* nnodes (1) = 8 over pipeline (2) * tensor (1)";
  const CommandResult validate = run_host_command("validate " + workspace_->manifest() +
                                                  " --set launch.nproc_per_node=8 --set parallel.pipeline=2");
  ASSERT_EQ(validate.exit_code, 0) << validate.output;
  EXPECT_NE(validate.output.find("world size   8 = pipeline 2 x tensor 1 x data 4"), std::string::npos)
      << validate.output;
  EXPECT_NE(validate.output.find("note         " + note), std::string::npos) << validate.output;
  const CommandResult plan = run_host_command("plan " + workspace_->manifest() + " --cluster " + PTDP_SOURCE_DIR +
                                              "/clusters/h200.toml --set launch.nproc_per_node=8 "
                                              "--set parallel.pipeline=2 --top 1");
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find("note: " + note), std::string::npos) << plan.output;
}

}  // namespace
}  // namespace ptdp::test
