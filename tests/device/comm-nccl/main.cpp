// comm-nccl-device-test: checks the comm-nccl plugin on real GPUs, one GPU per rank.
//
//   comm-nccl-device-test [gtest flags]    GoogleTest tests, each a scenario run by child
//                                          processes, one rank and GPU each: the world checks on
//                                          one rank and on two, and the peer-death scenario (rank
//                                          1 is killed); a test that needs more GPUs than the
//                                          machine has is skipped, saying so (ctest runs it)
//   comm-nccl-device-test --rank R --size N --dir DIR [--scenario world|peer-death]
//                                          one rank started by a launcher (RANK and WORLD_SIZE
//                                          from the environment work too); DIR is a directory
//                                          every rank sees, for the rendezvous
//   --plugin PATH       the plugin (default: ../lib/ptdp/libptdp-comm-nccl.so beside this program)
//   --time-limit S      give up after S seconds per rank, counting as a failure (default 600)
//
// Each rank prints PASS, FAIL or SKIP per check of its scenario.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "device_memory.hpp"
#include "scenarios.hpp"

namespace {

struct Options {
  int rank = -1;
  int size = -1;
  std::string dir;
  std::string scenario = "world";
  std::string plugin;
  unsigned time_limit_s = 600;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "comm-nccl-device-test: %s\n"
               "usage: comm-nccl-device-test [gtest flags] [--rank R --size N --dir DIR] "
               "[--scenario world|peer-death] [--plugin PATH] [--time-limit S]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    try {
      if (flag == "--rank") options.rank = std::stoi(value);
      else if (flag == "--size") options.size = std::stoi(value);
      else if (flag == "--dir") options.dir = value;
      else if (flag == "--scenario") options.scenario = value;
      else if (flag == "--plugin") options.plugin = value;
      else if (flag == "--time-limit") options.time_limit_s = static_cast<unsigned>(std::stoul(value));
      else usage("unknown option " + flag);
    } catch (const std::logic_error&) {
      usage("bad value '" + value + "' for " + flag);
    }
  }
  if (options.rank < 0 && std::getenv("RANK")) options.rank = std::atoi(std::getenv("RANK"));
  if (options.size < 0 && std::getenv("WORLD_SIZE")) options.size = std::atoi(std::getenv("WORLD_SIZE"));
  if (options.scenario != "world" && options.scenario != "peer-death")
    usage("unknown scenario '" + options.scenario + "'");
  if (options.rank >= 0 && (options.size < 1 || options.rank >= options.size || options.dir.empty()))
    usage("a launched rank needs --rank R, --size N (R < N) and --dir DIR");
  if (options.plugin.empty())
    options.plugin = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / ".." / "lib" / "ptdp" /
                      "libptdp-comm-nccl.so").lexically_normal().string();
  return options;
}

int alarm_rank = 0;

void on_time_limit(int) {
  char line[96];
  const int length = std::snprintf(line, sizeof line, "[rank %d] FAIL time limit reached: something hung\n", alarm_rank);
  if (write(STDOUT_FILENO, line, static_cast<size_t>(length)) < 0) _exit(4);
  _exit(3);
}

// One rank, in this process. Returns the number of failed checks.
int run_rank(const Options& options, const std::string& scenario, int rank, int size, const std::string& dir) {
  alarm_rank = rank;
  std::signal(SIGALRM, on_time_limit);
  alarm(options.time_limit_s);
  try {
    int devices = 0;
    TEST_CUDA(cudaGetDeviceCount(&devices));
    if (devices < size) {
      std::printf("[rank %d] FAIL %d ranks need %d GPUs, this machine has %d\n", rank, size, size, devices);
      return 1;
    }
    // The kernels plugin binds the device before the communicator starts; do the same.
    TEST_CUDA(cudaSetDevice(rank));
    CommPlugin plugin(options.plugin);
    FileRendezvous store(dir);
    RankSetup setup{rank, size, rank, &store, &plugin};
    return scenario == "world" ? run_world_checks(setup) : run_peer_death_checks(setup);
  } catch (const std::exception& e) {
    std::printf("[rank %d] FAIL cannot run the checks: %s\n", rank, e.what());
    return 1;
  }
}

// Runs `scenario` with `size` child processes; true when every rank passed. In the peer-death
// scenario rank 1 is meant to die by SIGKILL.
bool spawn(const Options& options, const std::string& scenario, int size, const std::string& dir) {
  std::printf("== scenario %s, %d rank(s)\n", scenario.c_str(), size);
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return false;
    }
    if (pid == 0) {
      setvbuf(stdout, nullptr, _IOLBF, 0);
      const int failures = run_rank(options, scenario, rank, size, dir);
      std::fflush(stdout);
      _exit(failures == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  bool passed = true;
  for (int rank = 0; rank < size; ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    const bool expected_death = scenario == "peer-death" && rank == 1 && WIFSIGNALED(status) &&
                                WTERMSIG(status) == SIGKILL;
    const bool clean_exit = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!clean_exit && !expected_death) {
      passed = false;
      if (WIFSIGNALED(status))
        std::printf("[rank %d] FAIL process died of signal %d\n", rank, WTERMSIG(status));
      else
        std::printf("[rank %d] FAIL process exited with status %d\n", rank, WEXITSTATUS(status));
    }
  }
  return passed;
}

// How many CUDA devices there are, asked in a child process: this one makes no CUDA call before
// it forks the ranks, so that each starts CUDA on its own.
int device_count() {
  const pid_t pid = fork();
  if (pid == 0) {
    int devices = 0;
    _exit(cudaGetDeviceCount(&devices) == cudaSuccess ? std::min(devices, 100) : 0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
}

Options options_for_tests;

// Runs `scenario` on `size` ranks in a fresh rendezvous directory; skipped without the GPUs.
void run_scenario(const std::string& scenario, int size) {
  const int devices = device_count();
  if (devices < size)
    GTEST_SKIP() << scenario << " on " << size << " rank(s) needs " << size << " GPU(s); this machine has " << devices;
  char pattern[] = "/tmp/comm-nccl-rendezvous-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr) << std::strerror(errno);
  const std::filesystem::path dir = pattern;
  EXPECT_TRUE(spawn(options_for_tests, scenario, size, dir.string()))
      << "a rank failed (its FAIL lines are above)";
  std::filesystem::remove_all(dir);
}

TEST(CommNcclDevice, WorldChecksOnOneRank) { run_scenario("world", 1); }
TEST(CommNcclDevice, WorldChecksOnTwoRanks) { run_scenario("world", 2); }
TEST(CommNcclDevice, PeerDeathStopsTheSurvivorNamingItsPeer) { run_scenario("peer-death", 2); }

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const Options options = parse(argc, argv);
  if (options.rank >= 0) {
    const int failures = run_rank(options, options.scenario, options.rank, options.size, options.dir);
    return failures == 0 ? 0 : 1;
  }
  options_for_tests = options;
  return RUN_ALL_TESTS();
}
