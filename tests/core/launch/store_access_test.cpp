// Who can use the rendezvous store: it listens on loopback alone when every rank is local,
// requires the job's secret (proven, never sent) when one is given and refuses to serve other
// machines without one, and closes connections beyond its cap at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
