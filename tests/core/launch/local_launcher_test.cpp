#include "launch/local_launcher.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ptdp/error.hpp"

namespace ptdp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs launch_local_ranks in a child process (so its signal handling and output redirection
// stay out of the test process), with stdout and stderr captured in files.
class LauncherProcess {
 public:
  LauncherProcess(int nproc, std::vector<std::string> argv, LaunchOptions options = {})
      : dir_(fs::temp_directory_path() / ("ptdp-launch-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(counter_++))) {
    fs::create_directories(dir_);
    for (std::string& a : argv) a = replace_dir(a);
    start_ = Clock::now();
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open((dir_ / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open((dir_ / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      int rc = 99;
      try {
        rc = launch_local_ranks(nproc, argv, options);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "exception: %s\n", e.what());
      }
      std::fflush(nullptr);
      ::_exit(rc);
    }
  }
  ~LauncherProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The launcher's exit code; fails the test (and kills it) if it runs past `limit`.
  int wait(std::chrono::seconds limit = 20s) {
    while (Clock::now() - start_ < limit) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        elapsed_ = std::chrono::duration<double>(Clock::now() - start_).count();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "launcher still running after " << limit.count() << " s";
    return -1;
  }

  // Waits until the ranks wrote their pid files.
  std::vector<pid_t> rank_pids(int n) {
    std::vector<pid_t> pids;
    const auto until = Clock::now() + 10s;
    for (int r = 0; r < n; ++r) {
      fs::path p = dir_ / ("pid" + std::to_string(r));
      std::string text;
      while ((text = read_file(p)).find('\n') == std::string::npos && Clock::now() < until)
        std::this_thread::sleep_for(10ms);
      pids.push_back(static_cast<pid_t>(std::atoi(text.c_str())));
    }
    return pids;
  }

  pid_t pid() const { return pid_; }
  double elapsed() const { return elapsed_; }
  std::string out() const { return read_file(dir_ / "stdout"); }
  std::string err() const { return read_file(dir_ / "stderr"); }
  std::string replace_dir(std::string s) const {
    for (size_t at; (at = s.find("$DIR")) != std::string::npos;) s.replace(at, 4, dir_.string());
    return s;
  }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  Clock::time_point start_;
  double elapsed_ = 0;
};

bool process_gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

TEST(LocalLauncher, EveryRankGetsItsEnvironmentAndOutputIsPrefixed) {
  LauncherProcess launcher(3, sh("echo \"hello $PTDP_RANK/$PTDP_WORLD_SIZE local $PTDP_LOCAL_RANK/"
                                 "$PTDP_LOCAL_WORLD_SIZE at $PTDP_MASTER_ADDR:$PTDP_MASTER_PORT\"; "
                                 "echo \"warn $PTDP_RANK\" >&2; printf 'no newline'"));
  EXPECT_EQ(launcher.wait(), 0);
  const std::string out = launcher.out(), err = launcher.err();
  EXPECT_EQ(out.find("[rank 0]"), std::string::npos) << "rank 0 prints unprefixed\n" << out;
  const size_t rank0 = out.find("hello 0/3 local 0/3 at 127.0.0.1:");
  ASSERT_NE(rank0, std::string::npos) << out;
  EXPECT_TRUE(rank0 == 0 || out[rank0 - 1] == '\n') << out;
  EXPECT_NE(out.find("[rank 1] hello 1/3 local 1/3 at 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 2] hello 2/3 local 2/3 at 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 2] no newline\n"), std::string::npos) << out;
  EXPECT_NE(err.find("warn 0\n"), std::string::npos) << err;
  EXPECT_NE(err.find("[rank 1] warn 1\n"), std::string::npos) << err;
  // All ranks were told the same port.
  const std::string port = out.substr(out.find("127.0.0.1:") + 10, 5);
  EXPECT_NE(out.find("[rank 1] hello 1/3 local 1/3 at 127.0.0.1:" + port), std::string::npos) << out;
}

TEST(LocalLauncher, OneFailingRankStopsTheOthers) {
  LaunchOptions options;
  options.grace = 3s;
  LauncherProcess launcher(
      4, sh("echo $$ > $DIR/pid$PTDP_RANK.tmp && mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; "
            "if [ $PTDP_RANK = 2 ]; then sleep 0.3; exit 3; fi; exec sleep 60"),
      options);
  const std::vector<pid_t> pids = launcher.rank_pids(4);
  EXPECT_EQ(launcher.wait(), 3);
  EXPECT_LT(launcher.elapsed(), 3.0) << "ranks that take SIGTERM must not wait for the grace period";
  EXPECT_NE(launcher.err().find("rank 2 exited with status 3; stopping the other 3 rank(s)"), std::string::npos)
      << launcher.err();
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << "rank process " << pid << " left behind";
}

TEST(LocalLauncher, RankKilledBySignalIsReported) {
  LauncherProcess launcher(2, sh("if [ $PTDP_RANK = 1 ]; then kill -9 $$; fi; exec sleep 60"));
  EXPECT_EQ(launcher.wait(), 128 + 9);
  EXPECT_NE(launcher.err().find("rank 1 killed by signal 9"), std::string::npos) << launcher.err();
}

TEST(LocalLauncher, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  LaunchOptions options;
  options.grace = 500ms;
  LauncherProcess launcher(
      2, sh("trap '' TERM; echo $$ > $DIR/pid$PTDP_RANK.tmp && mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; "
            "if [ $PTDP_RANK = 0 ]; then sleep 0.2; exit 1; fi; exec sleep 60"),
      options);
  const std::vector<pid_t> pids = launcher.rank_pids(2);
  EXPECT_EQ(launcher.wait(), 1);
  EXPECT_GE(launcher.elapsed(), 0.6);
  EXPECT_LT(launcher.elapsed(), 5.0);
  EXPECT_TRUE(process_gone(pids[1]));
}

TEST(LocalLauncher, SigtermToTheLauncherReachesEveryRank) {
  LauncherProcess launcher(
      3, sh("echo $$ > $DIR/pid$PTDP_RANK.tmp && mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; exec sleep 60"));
  const std::vector<pid_t> pids = launcher.rank_pids(3);
  ::kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait(), 128 + SIGTERM);
  EXPECT_LT(launcher.elapsed(), 8.0);
  EXPECT_NE(launcher.err().find("interrupted by signal 15"), std::string::npos) << launcher.err();
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << "rank process " << pid << " left behind";
}

TEST(LocalLauncher, CtrlCReachesEveryRank) {
  LauncherProcess launcher(
      2, sh("echo $$ > $DIR/pid$PTDP_RANK.tmp && mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; exec sleep 60"));
  const std::vector<pid_t> pids = launcher.rank_pids(2);
  ::kill(launcher.pid(), SIGINT);
  EXPECT_EQ(launcher.wait(), 128 + SIGINT);
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << "rank process " << pid << " left behind";
}

// A rank that takes SIGTERM as "finish the step, save, exit 75", as ptdp-host run's ranks do.
constexpr const char* kSavingRank =
    "trap 'sleep 1.5; exit 75' TERM USR1; echo $$ > $DIR/pid$PTDP_RANK.tmp && "
    "mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; while :; do sleep 0.1; done";

TEST(LocalLauncher, AStopSignalWaitsForTheRanksToSaveAndReturnsTheirCode) {
  LaunchOptions options;
  options.grace = 200ms;  // saving takes longer than this: the launcher must not cut it short
  options.stopped_by_signal_code = 75;
  LauncherProcess launcher(2, sh(kSavingRank), options);
  const std::vector<pid_t> pids = launcher.rank_pids(2);
  ::kill(launcher.pid(), SIGTERM);
  EXPECT_EQ(launcher.wait(), 75) << launcher.err();
  EXPECT_GE(launcher.elapsed(), 1.5);
  EXPECT_NE(launcher.err().find("finish their step, save a checkpoint and stop"), std::string::npos) << launcher.err();
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << "rank process " << pid << " left behind";
}

TEST(LocalLauncher, ASecondStopSignalStopsTheRanksAtOnce) {
  LaunchOptions options;
  options.stopped_by_signal_code = 75;
  LauncherProcess launcher(2, sh("trap 'while :; do sleep 0.1; done' TERM USR1; echo $$ > $DIR/pid$PTDP_RANK.tmp && "
                                 "mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; while :; do sleep 0.1; done"),
                           options);
  const std::vector<pid_t> pids = launcher.rank_pids(2);
  ::kill(launcher.pid(), SIGUSR1);
  std::this_thread::sleep_for(1200ms);
  const auto second = Clock::now();
  ::kill(launcher.pid(), SIGUSR1);
  EXPECT_EQ(launcher.wait(), 128 + SIGUSR1) << launcher.err();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - second).count(), 3.0);
  EXPECT_NE(launcher.err().find("second signal"), std::string::npos) << launcher.err();
  for (pid_t pid : pids) EXPECT_TRUE(process_gone(pid)) << "rank process " << pid << " left behind";
}

TEST(LocalLauncher, AStoppedRankIsNamedWhenTheRanksWaitingForItFail) {
  LaunchOptions options;
  options.grace = 500ms;
  // Rank 1 stops itself; rank 0 "times out waiting for it" and fails.
  LauncherProcess launcher(2, sh("echo $$ > $DIR/pid$PTDP_RANK.tmp && mv $DIR/pid$PTDP_RANK.tmp $DIR/pid$PTDP_RANK; "
                                 "if [ $PTDP_RANK = 1 ]; then kill -STOP $$; exec sleep 60; fi; sleep 0.5; exit 1"),
                           options);
  const std::vector<pid_t> pids = launcher.rank_pids(2);
  EXPECT_EQ(launcher.wait(), 1);
  EXPECT_NE(launcher.err().find("rank 1 (pid " + std::to_string(pids[1]) + ") is stopped"), std::string::npos)
      << launcher.err();
  EXPECT_LT(launcher.elapsed(), 5.0) << "the stopped rank was not ended promptly";
  EXPECT_TRUE(process_gone(pids[1]));
}

TEST(LocalLauncher, CommandThatCannotRunIsReported) {
  LauncherProcess launcher(2, {"/nonexistent/ptdp-rank"});
  EXPECT_EQ(launcher.wait(), 127);
  EXPECT_NE(launcher.err().find("cannot execute /nonexistent/ptdp-rank"), std::string::npos) << launcher.err();
  EXPECT_NE(launcher.err().find("exited with status 127"), std::string::npos) << launcher.err();
}

TEST(LocalLauncher, ExtraEnvironmentAndFixedPort) {
  LaunchOptions options;
  options.master_port = 29999;
  options.env = {{"PTDP_TEST_VALUE", "xyz"}, {"PTDP_RANK", "ignored"}};
  LauncherProcess launcher(2, sh("echo \"$PTDP_TEST_VALUE $PTDP_RANK $PTDP_MASTER_PORT\""), options);
  EXPECT_EQ(launcher.wait(), 0);
  EXPECT_NE(launcher.out().find("xyz 0 29999\n"), std::string::npos) << launcher.out();
  EXPECT_NE(launcher.out().find("[rank 1] xyz 1 29999\n"), std::string::npos) << launcher.out();
}

TEST(LocalLauncher, OneNodeOfSeveralStartsItsShareOfTheJobsRanks) {
  ::setenv("PTDP_RENDEZVOUS_SECRET", "the job's secret", 1);
  LaunchOptions options;
  options.master_addr = "10.0.0.1";
  options.master_port = 29400;
  options.nnodes = 3;
  options.node_rank = 1;
  LauncherProcess launcher(2, sh("echo \"$PTDP_RANK/$PTDP_WORLD_SIZE local $PTDP_LOCAL_RANK/$PTDP_LOCAL_WORLD_SIZE\""),
                           options);
  EXPECT_EQ(launcher.wait(), 0);
  ::unsetenv("PTDP_RENDEZVOUS_SECRET");
  // Node 1 of 3 with 2 ranks each holds ranks 2 and 3 of 6; every line is prefixed, since the
  // launcher's own output is rank 0's, which runs on node 0.
  EXPECT_NE(launcher.out().find("[rank 2] 2/6 local 0/2\n"), std::string::npos) << launcher.out();
  EXPECT_NE(launcher.out().find("[rank 3] 3/6 local 1/2\n"), std::string::npos) << launcher.out();
}

// What launch_local_ranks refuses `options` with, or "started".
std::string refusal_of(const LaunchOptions& options) {
  try {
    launch_local_ranks(2, {"/bin/true"}, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "started";
}

TEST(LocalLauncher, SeveralNodesNeedAFixedPortAndTheJobsSecret) {
  ::unsetenv("PTDP_RENDEZVOUS_SECRET");
  ::unsetenv("PTDP_RENDEZVOUS_SECRET_FILE");
  LaunchOptions options;
  options.master_addr = "10.0.0.1";
  options.nnodes = 2;
  options.master_port = 29400;
  EXPECT_NE(refusal_of(options).find("needs the job's secret on every node"), std::string::npos) << refusal_of(options);
  options.master_port = 0;
  EXPECT_NE(refusal_of(options).find("needs a fixed launch.master_port"), std::string::npos) << refusal_of(options);
  options.node_rank = 2;
  EXPECT_NE(refusal_of(options).find("node rank 2 outside nnodes 2"), std::string::npos) << refusal_of(options);
}

TEST(LocalLauncher, RefusesBadArguments) {
  EXPECT_THROW(launch_local_ranks(0, {"/bin/true"}, {}), Error);
  EXPECT_THROW(launch_local_ranks(2, {}, {}), Error);
}

}  // namespace
}  // namespace ptdp
