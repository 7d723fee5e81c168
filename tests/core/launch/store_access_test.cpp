// Who can use the rendezvous store: it listens on loopback alone when every rank is local,
// requires the job's secret (proven, never sent) when one is given and refuses to serve other
// machines without one, and closes connections beyond its cap at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <fstream>
#include <sstream>

#include "launch/rendezvous_secret.hpp"
#include "launch/store_protocol.hpp"
#include "launch/tcp_store.hpp"
#include "support/error_message.hpp"
#include "ptdp/error.hpp"

namespace ptdp {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

using test::error_of;

// Sets an environment variable for the scope of a test.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedVariable() { ::unsetenv(name_); }

 private:
  const char* name_;
};

// The local address of the socket listening on `port`, from /proc/net/tcp ("0100007F": 127.0.0.1).
std::string listening_address(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // header
  char wanted[8];
  std::snprintf(wanted, sizeof wanted, "%04X", port);
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.substr(local.find(':') + 1) == wanted) return local.substr(0, local.find(':'));
  }
  return "";
}

TEST(StoreAccess, AStoreForLocalRanksListensOnLoopbackAlone) {
  TcpStore store("127.0.0.1", 0, 0, 1, 5s);
  EXPECT_EQ(listening_address(store.port()), "0100007F");
}

TEST(StoreAccess, ReachableFromOtherMachinesItRefusesToStartWithoutASecret) {
  ::unsetenv(kRendezvousSecretVariable);
  ::unsetenv(kRendezvousSecretFileVariable);
  EXPECT_THAT(error_of([] { TcpStore("node7", 0, 0, 2, 1s); }),
              HasSubstr("master_addr node7 can be reached from other machines"));
}

TEST(StoreAccess, WithoutASecretEveryRankRefusesAtOnceNotOnlyRankZero) {
  ::unsetenv(kRendezvousSecretVariable);
  ::unsetenv(kRendezvousSecretFileVariable);
  // Rank 3 would otherwise wait its whole 30 s for a store rank 0 refused to start.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([] { TcpStore("node7", 29500, 3, 4, 30s); }),
              HasSubstr("master_addr node7 can be reached from other machines"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(StoreAccess, WithASecretEveryConnectionMustProveIt) {
  std::optional<TcpStore> server;
  {
    ScopedVariable secret(kRendezvousSecretVariable, "the job's secret");
    server.emplace("127.0.0.1", 0, 0, 3, 5s);
    TcpStore member("127.0.0.1", server->port(), 1, 3, 5s);
    member.set("k", {1, 2});
    EXPECT_EQ(server->get("k", 1s), (std::vector<uint8_t>{1, 2}));
  }
  EXPECT_THAT(error_of([&] { TcpStore("127.0.0.1", server->port(), 2, 3, 2s); }),
              HasSubstr("requires the job's secret and this rank has none"));
  ScopedVariable other(kRendezvousSecretVariable, "a guess");
  EXPECT_THAT(error_of([&] { TcpStore("127.0.0.1", server->port(), 2, 3, 2s); }), HasSubstr("refused this rank: wrong secret"));
}

TEST(StoreAccess, ConnectionsBeyondTheCapAreClosedAtOnce) {
  TcpStore server("127.0.0.1", 0, 0, 1, 5s);  // a world of 1: room for 2 + 16 connections
  std::vector<net::FileDescriptor> flood;
  int greeted = 0;
  for (int i = 0; i < 60; ++i) {
    std::string reason;
    flood.push_back(net::try_connect_tcp("127.0.0.1", server.port(), reason));
    ASSERT_TRUE(flood.back()) << reason;
    std::vector<uint8_t> hello;
    greeted += store_protocol::recv_frame(flood.back().get(), hello, net::Clock::now() + 2s) == net::IoResult::Done;
  }
  EXPECT_LE(greeted, 18);
  EXPECT_GE(greeted, 16);
  flood.clear();
  std::this_thread::sleep_for(200ms);  // the server notices the closed connections
  server.set("after", {7});
  EXPECT_EQ(server.get("after", 1s), std::vector<uint8_t>{7});
}

// Entries of a /proc/self folder: the process's open descriptors, or its threads.
size_t entries_of(const char* folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++n;
  return n;
}

// Before a connection has proved the secret, nothing beyond the handshake's few bytes is read or
// allocated: a length prefix of 1 GiB is the end of that connection, at once.
TEST(StoreAccess, AHugeLengthBeforeTheProofClosesTheConnectionAtOnce) {
  ScopedVariable secret(kRendezvousSecretVariable, "the job's secret");
  TcpStore server("127.0.0.1", 0, 0, 1, 5s);
  std::string reason;
  net::FileDescriptor fd = net::try_connect_tcp("127.0.0.1", server.port(), reason);
  ASSERT_TRUE(fd) << reason;
  std::vector<uint8_t> hello;
  ASSERT_EQ(store_protocol::recv_frame(fd.get(), hello, net::Clock::now() + 2s), net::IoResult::Done);
  const uint32_t huge = htonl(1u << 30);
  ASSERT_EQ(::send(fd.get(), &huge, sizeof huge, MSG_NOSIGNAL), ssize_t(sizeof huge));
  const auto start = std::chrono::steady_clock::now();
  char byte = 0;
  EXPECT_EQ(net::recv_all(fd.get(), &byte, 1, net::Clock::now() + 5s), net::IoResult::Closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "the server waited for a body it should not read";
}

// A flood of connections that send garbage, or a length prefix of 0xFFFFFFFF, and go away leaves
// the server's descriptors and threads where they started (it closes each connection when it
// ends, and joins its thread within a second).
TEST(StoreAccess, AFloodOfBadConnectionsLeavesNothingBehind) {
  ScopedVariable secret(kRendezvousSecretVariable, "the job's secret");
  TcpStore server("127.0.0.1", 0, 0, 1, 5s);
  std::this_thread::sleep_for(1500ms);  // the server's own connections settled
  const size_t fds_before = entries_of("/proc/self/fd"), threads_before = entries_of("/proc/self/task");
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (int i = 0; i < 1000 && std::chrono::steady_clock::now() < deadline; ++i) {
    std::string reason;
    net::FileDescriptor fd = net::try_connect_tcp("127.0.0.1", server.port(), reason);
    ASSERT_TRUE(fd) << reason;
    const uint8_t garbage[8] = {0xff, 0xff, 0xff, 0xff, uint8_t(i), 0x13, 0x37, 0x00};
    ::send(fd.get(), garbage, i % 2 ? sizeof garbage : 4, MSG_NOSIGNAL);
  }
  // Bounded wait for the server to finish with the last of them.
  size_t fds_after = 0, threads_after = 0;
  for (int wait = 0; wait < 50; ++wait) {
    std::this_thread::sleep_for(100ms);
    fds_after = entries_of("/proc/self/fd");
    threads_after = entries_of("/proc/self/task");
    if (fds_after <= fds_before && threads_after <= threads_before) break;
  }
  EXPECT_LE(fds_after, fds_before);
  EXPECT_LE(threads_after, threads_before);
  server.set("after", {7});
  EXPECT_EQ(server.get("after", 1s), std::vector<uint8_t>{7});
}

TEST(StoreAccess, ASecretFileOthersCanReadIsRefused) {
  char path[] = "/tmp/ptdp-secret-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "s3cret\n", 7), 7);
  ::close(fd);
  ::unsetenv(kRendezvousSecretVariable);
  ScopedVariable file(kRendezvousSecretFileVariable, path);
  ::chmod(path, 0600);
  EXPECT_EQ(rendezvous_secret(), "s3cret");
  ::chmod(path, 0644);
  EXPECT_THAT(error_of([] { rendezvous_secret(); }), HasSubstr("other users may read it (mode 644); chmod 600 it"));
  ::unlink(path);
}

TEST(StoreAccess, FreshSecretsDiffer) {
  const std::string a = new_rendezvous_secret(), b = new_rendezvous_secret();
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace ptdp
