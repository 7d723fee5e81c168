#include "launch/tcp_store.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "launch/socket_io.hpp"
#include "support/error_message.hpp"
#include "ptdp/error.hpp"

namespace ptdp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

using test::error_of;

TEST(TcpStore, SetAndGetAcrossRanks) {
  TcpStore server("127.0.0.1", 0, 0, 2, 5s);
  TcpStore client("127.0.0.1", server.port(), 1, 2, 5s);
  const std::vector<uint8_t> binary = {0, 1, 255, 0, 7};
  client.set("from-1", binary);
  server.set("from-0", bytes("hello"));
  server.set("empty", {});
  EXPECT_EQ(server.get("from-1", 1s), binary);
  EXPECT_EQ(client.get("from-0", 1s), bytes("hello"));
  EXPECT_TRUE(client.get("empty", 1s).empty());
  client.set("from-0", bytes("overwritten"));
  EXPECT_EQ(server.get("from-0", 1s), bytes("overwritten"));
}

TEST(TcpStore, GetBlocksUntilTheKeyIsSet) {
  TcpStore server("127.0.0.1", 0, 0, 2, 5s);
  TcpStore client("127.0.0.1", server.port(), 1, 2, 5s);
  const auto start = Clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(300ms);
    server.set("late", bytes("value"));
  });
  EXPECT_EQ(client.get("late", 5s), bytes("value"));
  setter.join();
  EXPECT_GE(seconds_since(start), 0.25);
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(TcpStore, GetTimeoutNamesTheKeyAndTheTimeout) {
  TcpStore server("127.0.0.1", 0, 0, 1, 5s);
  const auto start = Clock::now();
  const std::string message = error_of([&] { server.get("comm/world/addr/3", 300ms); });
  EXPECT_NE(message.find("'comm/world/addr/3'"), std::string::npos) << message;
  EXPECT_NE(message.find("0.3 s"), std::string::npos) << message;
  EXPECT_GE(seconds_since(start), 0.25);
  EXPECT_LT(seconds_since(start), 3.0);
  server.set("still-usable", bytes("yes"));
  EXPECT_EQ(server.get("still-usable", 1s), bytes("yes"));
}

TEST(TcpStore, AddIsAtomicAcrossClients) {
  TcpStore server("127.0.0.1", 0, 0, 5, 5s);
  std::vector<std::thread> threads;
  for (int rank = 1; rank < 5; ++rank)
    threads.emplace_back([&, rank] {
      TcpStore client("127.0.0.1", server.port(), rank, 5, 5s);
      for (int i = 0; i < 50; ++i) client.add("counter", rank);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(server.add("counter", 0), 50 * (1 + 2 + 3 + 4));
  EXPECT_EQ(server.get("counter", 1s), bytes("500"));
  EXPECT_EQ(server.add("fresh", -3), -3);
}

TEST(TcpStore, AddOnANonCounterNamesTheKey) {
  TcpStore server("127.0.0.1", 0, 0, 1, 5s);
  server.set("text", bytes("abc"));
  const std::string message = error_of([&] { server.add("text", 1); });
  EXPECT_NE(message.find("key 'text' holds a value that is not a counter"), std::string::npos) << message;
}

TEST(TcpStore, BarrierHoldsEveryRankUntilAllArrive) {
  constexpr int kWorld = 4, kRounds = 3;
  TcpStore server("127.0.0.1", 0, 0, kWorld, 5s);
  std::atomic<int> arrived{0};
  std::atomic<bool> early{false};
  auto body = [&](TcpStore& store) {
    for (int round = 1; round <= kRounds; ++round) {
      arrived++;
      store.barrier("step");
      if (arrived.load() < round * kWorld) early = true;
    }
  };
  std::vector<std::thread> threads;
  for (int rank = 1; rank < kWorld; ++rank)
    threads.emplace_back([&, rank] {
      TcpStore client("127.0.0.1", server.port(), rank, kWorld, 5s);
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * rank));
      body(client);
    });
  body(server);
  for (auto& t : threads) t.join();
  EXPECT_FALSE(early) << "a rank left a barrier before every rank entered it";
  EXPECT_EQ(arrived, kRounds * kWorld);
}

TEST(TcpStore, BarrierTimeoutSaysWhoArrived) {
  TcpStore server("127.0.0.1", 0, 0, 3, 5s);
  TcpStore client("127.0.0.1", server.port(), 1, 3, 5s);
  std::thread other([&] { error_of([&] { client.barrier("sync", 400ms); }); });
  const std::string message = error_of([&] { server.barrier("sync", 400ms); });
  other.join();
  EXPECT_NE(message.find("barrier 'sync' timed out after 0.4 s: 2 of 3 ranks arrived"), std::string::npos)
      << message;
}

TEST(TcpStore, ConnectFailsAfterTimeoutNamingTheAddress) {
  const int port = net::pick_free_port();
  const auto start = Clock::now();
  const std::string message = error_of([&] { TcpStore("127.0.0.1", port, 1, 2, 300ms); });
  EXPECT_NE(message.find("could not reach the store at 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << message;
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST(TcpStore, RefusesBadRankOrPort) {
  EXPECT_NE(error_of([] { TcpStore("127.0.0.1", 1234, 2, 2, 1s); }).find("rank 2 is outside world size 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { TcpStore("127.0.0.1", 0, 1, 2, 1s); }).find("invalid master port 0"),
            std::string::npos);
}

TEST(TcpStore, ServerDeathFailsWaitingClientsPromptly) {
  const int port = net::pick_free_port();
  const pid_t server_pid = ::fork();
  ASSERT_GE(server_pid, 0);
  if (server_pid == 0) {
    try {
      TcpStore rank0("127.0.0.1", port, 0, 2, 10s);
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  TcpStore client("127.0.0.1", port, 1, 2, 10s);
  client.set("alive", bytes("1"));
  std::thread killer([&] {
    std::this_thread::sleep_for(300ms);
    ::kill(server_pid, SIGKILL);
  });
  const auto start = Clock::now();
  const std::string message = error_of([&] { client.get("never-set", 30s); });
  const double waited = seconds_since(start);
  killer.join();
  ::waitpid(server_pid, nullptr, 0);
  EXPECT_NE(message.find("lost the store at 127.0.0.1:" + std::to_string(port)), std::string::npos) << message;
  EXPECT_NE(message.find("get 'never-set'"), std::string::npos) << message;
  EXPECT_LT(waited, 5.0) << "a dead server must not leave clients waiting for their timeout";
  // Later calls fail at once with the same reason.
  const auto again = Clock::now();
  EXPECT_NE(error_of([&] { client.set("x", {}); }).find("lost the store"), std::string::npos);
  EXPECT_LT(seconds_since(again), 1.0);
}

TEST(TcpStore, RankZeroKeepsServingUntilClientsLeave) {
  auto rank0 = std::make_unique<TcpStore>("127.0.0.1", 0, 0, 2, 5s);
  auto client = std::make_unique<TcpStore>("127.0.0.1", rank0->port(), 1, 2, 5s);
  rank0->set("last-words", bytes("bye"));
  std::atomic<bool> finished{false};
  std::thread finisher([&] {
    rank0.reset();  // lingers while the client is connected
    finished = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(client->get("last-words", 1s), bytes("bye"));
  EXPECT_FALSE(finished);
  const auto left = Clock::now();
  client.reset();
  finisher.join();
  EXPECT_LT(seconds_since(left), 2.0) << "rank 0 must stop lingering once every client left";
}

}  // namespace
}  // namespace ptdp
