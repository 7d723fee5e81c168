// A rank that dies mid-run stops the job promptly with a message naming it, and the metrics
// already written stay on disk.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "host_run.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

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

TEST(RankFailure, KilledRankStopsTheJobWithAClearError) {
  TinyGptWorkspace ws;
  const std::string metrics = ws.dir() + "/metrics.jsonl", log = ws.dir() + "/log.txt";
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    freopen(log.c_str(), "w", stdout);
    dup2(fileno(stdout), STDERR_FILENO);
    execl(PTDP_TEST_HOST, PTDP_TEST_HOST, "run", ws.manifest().c_str(), "--nproc", "2", "--set",
          "parallel.pipeline=2", "--set", "run.steps=100000", "--metrics", metrics.c_str(), nullptr);
    _exit(127);
  }
  // Wait until two steps are on disk, then kill rank 1 the hard way.
  const auto started = Clock::now();
  while (count_lines(metrics) < 2 && Clock::now() - started < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int steps_before = count_lines(metrics);
  ASSERT_GE(steps_before, 2) << "the job did not train";
  const pid_t victim = find_rank(launcher, 1);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = Clock::now();

  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(launcher, &status, WNOHANG)) == 0 && Clock::now() - killed < std::chrono::seconds(40))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) {
    kill(launcher, SIGKILL);
    waitpid(launcher, &status, 0);
    FAIL() << "the job did not stop within 40 s of rank 1's death";
  }
  EXPECT_LT(Clock::now() - killed, std::chrono::seconds(40));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(output.find("rank 1 killed by signal 9"), std::string::npos) << output;
  EXPECT_GE(count_lines(metrics), steps_before) << "metrics written before the failure were lost";
  EXPECT_EQ(find_rank(launcher, 0), -1) << "rank 0 outlived the job";
}

}  // namespace
}  // namespace ptdp::test
