// Behaviour particular to comm-ucx, beyond the communicator conformance suite: it sleeps while
// it waits, honours its configuration, refuses what it cannot move, and reports mismatches.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>
#include <functional>
#include <thread>

#include "launch/socket_io.hpp"
#include "launch/tcp_store.hpp"
#include "rank_processes.hpp"
#include "ucx_communicator.hpp"

namespace ptdp::comm_ucx {
namespace {

using namespace std::chrono_literals;
using conformance::RankOutcome;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double cpu_seconds() {
  timespec t;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// The message of what `call` throws ("" when it does not throw).
template <class F>
std::string error_of(F&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

void require_mentions(const std::string& message, const std::string& word, const std::string& what) {
  require(message.find(word) != std::string::npos, what + ": '" + word + "' missing from: " + message);
}

// How an error names a peer on this machine: "peer 1 (host NAME)" (every rank here is on it).
std::string on_this_host(const std::string& peer) {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return peer + " (host " + name + ")";
}

Tensor floats(std::vector<float>& v) { return Tensor{v.data(), DType::F32, {static_cast<int64_t>(v.size())}, {}}; }

// Runs body as every rank of a world whose communicator is made from `options`.
std::vector<RankOutcome> run_world(int world, const UcxOptions& options, double timeout_s,
                                   const std::function<void(int rank, UcxCommunicator& comm)>& body) {
  const int port = net::pick_free_port();
  return conformance::run_ranks(world, 60s, [&](int rank) {
    TcpStore store("127.0.0.1", port, rank, world, 10s);
    UcxCommunicator comm(options);
    comm.init(CommInit{rank, world, &store, "comm-ucx-test", timeout_s, Device{}});
    body(rank, comm);
  });
}

void expect_success(const std::vector<RankOutcome>& outcomes) {
  for (const RankOutcome& o : outcomes) EXPECT_EQ(o.error, "") << "rank " << o.rank;
}

TEST(CommUcx, WaitingRanksSleepInsteadOfSpinning) {
  expect_success(run_world(4, {}, 30, [](int rank, UcxCommunicator& comm) {
    std::vector<float> v(1 << 16, 1.0f);
    comm.all_reduce(floats(v), ReduceOp::Sum);
    if (rank == 0) std::this_thread::sleep_for(1500ms);
    const double cpu = cpu_seconds();
    const auto start = Clock::now();
    comm.all_reduce(floats(v), ReduceOp::Sum);
    if (rank == 0) return;
    const double waited = seconds_since(start), used = cpu_seconds() - cpu;
    require(waited > 1.0, "did not wait for rank 0: " + std::to_string(waited) + " s");
    require(used < 0.25 * waited, "burnt " + std::to_string(used) + " s of CPU in a " + std::to_string(waited) +
                                      " s wait");
  }));
}

TEST(CommUcx, TcpOnlyTransportsWork) {
  expect_success(run_world(3, UcxOptions{"tcp", 0}, 30, [](int rank, UcxCommunicator& comm) {
    std::vector<float> v(1 << 18, static_cast<float>(rank + 1));
    comm.all_reduce(floats(v), ReduceOp::Sum);
    require(v.front() == 6.0f && v.back() == 6.0f, "all_reduce over tcp gave " + std::to_string(v.back()));
    std::vector<float> b(1 << 18, static_cast<float>(rank));
    comm.broadcast(floats(b), 2);
    require(b.front() == 2.0f && b.back() == 2.0f, "broadcast over tcp");
  }));
}

// The local addresses of the TCP sockets this process listens on, as /proc/net/tcp{,6} write them
// ("0100007F" is 127.0.0.1).
std::vector<std::string> listening_addresses() {
  std::set<std::string> mine;  // socket inodes of this process
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) mine.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> addresses;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && mine.count(inode)) addresses.push_back(local.substr(0, local.find(':')));
    }
  }
  return addresses;
}

bool is_loopback(const std::string& address) {
  return address == "0100007F" || address == "00000000000000000000000001000000";
}

// A job whose ranks are all on this host listens on loopback alone: nothing it opens can be
// reached from another machine. (Without one_host, UCX listens on every interface, here eth0 too.)
TEST(CommUcx, ARankOfAOneHostJobListensOnLoopbackAlone) {
  for (const bool one_host : {true, false}) {
    UcxOptions options{"tcp", 0};
    options.one_host = one_host;
    expect_success(run_world(2, options, 30, [one_host](int rank, UcxCommunicator& comm) {
      std::vector<float> v(1024, static_cast<float>(rank + 1));
      comm.all_reduce(floats(v), ReduceOp::Sum);
      require(v.front() == 3.0f, "all_reduce over loopback");
      const std::vector<std::string> addresses = listening_addresses();
      require(!addresses.empty(), "UCX's TCP transport listens on nothing");
      bool all_loopback = true;
      for (const std::string& a : addresses) all_loopback = all_loopback && is_loopback(a);
      if (one_host) require(all_loopback, "a one-host rank listens on a non-loopback address");
      comm.barrier();
    }));
  }
}

TEST(CommUcx, DeadPeerOverTcpIsNamed) {
  const std::vector<RankOutcome> outcomes = run_world(4, UcxOptions{"tcp", 0}, 20, [](int rank, UcxCommunicator& comm) {
    std::vector<float> v(1 << 18, 1.0f);
    comm.all_reduce(floats(v), ReduceOp::Sum);
    comm.barrier();
    if (rank == 2) ::_exit(3);
    const auto start = Clock::now();
    const std::string message = error_of([&] {
      for (int i = 0; i < 100000; ++i) comm.all_reduce(floats(v), ReduceOp::Sum);
    });
    require_mentions(message, "peer 2", "rank " + std::to_string(rank));
    // A closed TCP connection is noticed at once, long before the 20 s timeout.
    require(seconds_since(start) < 5, "took " + std::to_string(seconds_since(start)) + " s: " + message);
  });
  for (const RankOutcome& o : outcomes)
    if (o.rank == 2) EXPECT_EQ(o.exit_code, 3);
    else EXPECT_EQ(o.error, "") << "rank " << o.rank;
}

TEST(CommUcx, OwnTimeoutOverridesTheJobs) {
  expect_success(run_world(2, UcxOptions{"", 0.8}, 30, [](int rank, UcxCommunicator& comm) {
    std::vector<float> v(4);
    const auto start = Clock::now();
    if (rank == 0) {
      const std::string message = error_of([&] { comm.recv(floats(v), 1, 3); });
      require_mentions(message, "recv: timed out after 0.8 s waiting for " + on_this_host("peer 1"), "rank 0");
      require(seconds_since(start) < 3, "timed out only after " + std::to_string(seconds_since(start)) + " s");
    } else {
      std::this_thread::sleep_for(1500ms);
      const std::string message = error_of([&] { comm.barrier(); });
      require_mentions(message, on_this_host("world rank 0") + " failed", "rank 1");
    }
  }));
}

// Rank 0 sends 8 floats, rank 1 receives `receive` floats.
void check_size_mismatch(size_t receive, const std::string& expected) {
  expect_success(run_world(2, {}, 10, [&](int rank, UcxCommunicator& comm) {
    std::vector<float> sent(8, 1.0f), received(receive);
    if (rank == 0) {
      comm.send(floats(sent), 1, 1);
      require_mentions(error_of([&] { comm.barrier(); }), on_this_host("world rank 1") + " failed",
                       "rank 0 after rank 1's failure");
    } else {
      require_mentions(error_of([&] { comm.recv(floats(received), 0, 1); }), expected, "rank 1");
    }
  }));
}

TEST(CommUcx, ReceiveBufferTooSmallIsReported) {
  check_size_mismatch(4, "recv: message from " + on_this_host("peer 0") + " is larger than the 16-byte buffer");
}

TEST(CommUcx, ReceiveBufferTooLargeIsReported) {
  check_size_mismatch(16, "recv: received 32 bytes from " + on_this_host("peer 0") + ", expected 64");
}

TEST(CommUcx, RefusesWhatItCannotMove) {
  expect_success(run_world(1, {}, 10, [](int, UcxCommunicator& comm) {
    std::vector<uint8_t> bytes(4);
    require_mentions(error_of([&] { comm.all_reduce(Tensor{bytes.data(), DType::U8, {4}, {}}, ReduceOp::Sum); }),
                     "all_reduce: cannot reduce u8 tensors", "u8");
    std::vector<float> v(4);
    Tensor on_gpu = floats(v);
    on_gpu.device = Device{MemoryKind::Cuda, 0};
    // Either this build moves no CUDA memory, or the rank was given no CUDA device at init.
    require_mentions(error_of([&] { comm.broadcast(on_gpu, 0); }), "broadcast: buffer is in CUDA memory",
                     "cuda tensor");
    require_mentions(error_of([&] { comm.send(Tensor{nullptr, DType::F32, {4}, {}}, 0, 0); }), "has no data",
                     "null buffer");
    std::vector<int32_t> ints(4);
    require_mentions(error_of([&] {
                       comm.reduce_scatter(floats(v), Tensor{ints.data(), DType::I32, {4}, {}}, ReduceOp::Sum);
                     }),
                     "input is f32 but output is i32", "dtype mismatch");
    require_mentions(error_of([&] { comm.send(floats(v), 0, -4); }), "send: tag -4 is negative", "negative tag");
    require_mentions(error_of([&] { comm.group_end(); }), "group_end() without group_start()", "group_end");
    // Refused calls leave the communicator usable.
    comm.all_reduce(floats(v), ReduceOp::Max);
  }));
}

TEST(CommUcx, CallsOutOfOrderAreRefused) {
  UcxCommunicator idle(UcxOptions{});
  std::vector<float> v(4);
  EXPECT_NE(error_of([&] { idle.all_reduce(floats(v), ReduceOp::Sum); }).find("all_reduce: init() was not called"),
            std::string::npos);
  EXPECT_NE(error_of([&] { idle.barrier(); }).find("init() was not called"), std::string::npos);
  EXPECT_NE(error_of([&] { idle.split(0, 0, "x"); }).find("split: init() was not called"), std::string::npos);

  TcpStore store("127.0.0.1", 0, 0, 1, 5s);
  UcxCommunicator comm(UcxOptions{});
  comm.init(CommInit{0, 1, &store, "twice", 5, Device{}});
  EXPECT_NE(error_of([&] { comm.init(CommInit{0, 1, &store, "twice-again", 5, Device{}}); }).find("already called"),
            std::string::npos);

  UcxCommunicator aborted(UcxOptions{});
  aborted.abort("job cancelled");
  EXPECT_NE(error_of([&] { aborted.init(CommInit{0, 1, &store, "aborted", 5, Device{}}); }).find("aborted: job cancelled"),
            std::string::npos);
}

TEST(CommUcx, InitRefusesBadWorlds) {
  TcpStore store("127.0.0.1", 0, 0, 1, 5s);
  auto init_error = [&](CommInit init) {
    init.store = init.store ? init.store : &store;
    UcxCommunicator comm(UcxOptions{});
    return error_of([&] { comm.init(init); });
  };
  EXPECT_NE(init_error({3, 2, &store, "a", 5, Device{}}).find("rank outside world size 2"), std::string::npos);
  EXPECT_NE(init_error({0, 0, &store, "b", 5, Device{}}).find("world size 0 outside 1..65536"), std::string::npos);
  EXPECT_NE(init_error({0, 1, &store, "c", 0, Device{}}).find("timeout 0 s must be positive"), std::string::npos);
  UcxCommunicator comm(UcxOptions{});
  EXPECT_NE(error_of([&] { comm.init(CommInit{0, 1, nullptr, "d", 5, Device{}}); }).find("no rendezvous store"),
            std::string::npos);
}

TEST(CommUcx, RanksDisagreeingOnTheWorldSizeFailAtInit) {
  const int port = net::pick_free_port();
  const std::vector<RankOutcome> outcomes = conformance::run_ranks(2, 30s, [&](int rank) {
    TcpStore store("127.0.0.1", port, rank, 2, 10s);
    UcxCommunicator comm(UcxOptions{});
    const std::string message = error_of([&] { comm.init(CommInit{rank, rank == 0 ? 2 : 3, &store, "sizes", 2, Device{}}); });
    if (rank == 0) require_mentions(message, "rank 1 published a world of 3 ranks, this rank has 2", "rank 0");
    else require_mentions(message, "rank 0 published a world of 2 ranks, this rank has 3", "rank 1");
  });
  expect_success(outcomes);
}

TEST(CommUcx, NegativeColorGivesNoGroup) {
  expect_success(run_world(3, {}, 10, [](int rank, UcxCommunicator& comm) {
    std::shared_ptr<Communicator> group = comm.split(rank == 1 ? -1 : 7, 0, "without-1");
    if (rank == 1) {
      require(group == nullptr, "rank 1 got a group for a negative color");
    } else {
      require(group && group->size() == 2, "group of ranks 0 and 2");
      std::vector<float> v(3, static_cast<float>(rank));
      group->all_reduce(floats(v), ReduceOp::Sum);
      require(v[0] == 2.0f, "sum over ranks 0 and 2 is " + std::to_string(v[0]));
    }
    comm.barrier();
  }));
}

}  // namespace
}  // namespace ptdp::comm_ucx
