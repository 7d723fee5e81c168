// A rank that dies mid-run stops the job promptly with a message naming it, and the metrics
// already written stay on disk: across a pipeline, and across data-parallel replicas, whose
// survivor may be waiting in a bucket reduction on its reduction lane (or, with the distributed
// optimizer, in a weight all-gather there).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The child of `launcher` whose environment says PTDP_RANK=<rank>.
pid_t find_rank(pid_t launcher, int rank) {
  const std::string want = "PTDP_RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != launcher) continue;
    std::ifstream env(entry.path() / "environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var == want) return static_cast<pid_t>(std::stoi(name));
  }
  return -1;
}

class RankFailure : public ::testing::TestWithParam<std::string> {};

TEST_P(RankFailure, KilledRankStopsTheJobWithAClearError) {
  TinyGptWorkspace ws;
  const std::string metrics = ws.dir() + "/metrics.jsonl";
  std::vector<std::string> sets = {"run.steps=100000"};
  if (GetParam() == "distributed_optimizer") sets.insert(sets.end(), {"parallel.data=2", "parallel.distributed_optimizer=true"});
  else sets.push_back("parallel." + GetParam() + "=2");
  BackgroundRun job(ws, sets, 2, metrics);
  const pid_t launcher = job.pid();
  // Wait until two steps are on disk, then kill rank 1 the hard way.
  ASSERT_TRUE(job.wait_for_steps(2, std::chrono::seconds(60))) << "the job did not train:\n" << job.output();
  const int steps_before = count_steps(metrics);
  const pid_t victim = find_rank(launcher, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = Clock::now();
  const std::optional<int> code = job.wait(std::chrono::seconds(40));
  ASSERT_TRUE(code.has_value()) << "the job did not stop within 40 s of rank 1's death";
  EXPECT_LT(Clock::now() - killed, std::chrono::seconds(40));
  EXPECT_NE(*code, 0);
  const std::string output = job.output();
  EXPECT_NE(output.find("rank 1 killed by signal 9"), std::string::npos) << output;
  EXPECT_GE(count_steps(metrics), steps_before) << "metrics written before the failure were lost";
  EXPECT_EQ(find_rank(launcher, 0), -1) << "rank 0 outlived the job";
}

// A stopped rank (SIGSTOP, a debugger) is found after one launch.timeout_s whichever rank it is:
// rank 0, which serves the rendezvous store, no longer lingers for a connection the stopped rank
// will never close (it took two timeouts for any rank but rank 0).
TEST(RankStopped, AStoppedRankOtherThanRankZeroIsFoundAfterOneTimeout) {
  TinyGptWorkspace ws;
  const std::string metrics = ws.dir() + "/metrics.jsonl";
  BackgroundRun job(ws, {"run.steps=100000", "parallel.pipeline=2", "launch.timeout_s=5"}, 2, metrics);
  ASSERT_TRUE(job.wait_for_steps(2, std::chrono::seconds(60))) << "the job did not train:\n" << job.output();
  const pid_t victim = find_rank(job.pid(), 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGSTOP), 0);
  const auto stopped = Clock::now();
  const std::optional<int> code = job.wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "the job did not end within 30 s of rank 1's stop";
  const double seconds = std::chrono::duration<double>(Clock::now() - stopped).count();
  EXPECT_LT(seconds, 8.0) << "one timeout is 5 s:\n" << job.output();
  EXPECT_NE(*code, 0);
  EXPECT_NE(job.output().find("rank 1 (pid " + std::to_string(victim) + ") is stopped (SIGSTOP or a debugger)"),
            std::string::npos)
      << job.output();
}

// SIGTERM sent to one rank alone stops the job cleanly, and rank 0 names the signal it never got.
TEST(RankStopped, SigtermToOneRankIsNamedByTheJob) {
  TinyGptWorkspace ws;
  const std::string metrics = ws.dir() + "/metrics.jsonl";
  BackgroundRun job(ws, {"run.steps=100000", "parallel.pipeline=2"}, 2, metrics);
  ASSERT_TRUE(job.wait_for_steps(2, std::chrono::seconds(60))) << "the job did not train:\n" << job.output();
  const pid_t victim = find_rank(job.pid(), 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGTERM), 0);
  const std::optional<int> code = job.wait(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << job.output();
  EXPECT_EQ(*code, 75) << job.output();
  EXPECT_NE(job.output().find("stopped by signal 15 (SIGTERM) after step "), std::string::npos) << job.output();
}

INSTANTIATE_TEST_SUITE_P(TwoRanks, RankFailure, ::testing::Values("pipeline", "data", "distributed_optimizer"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace ptdp::test
