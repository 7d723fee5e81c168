#pragma once
// The rendezvous store's server: a key-value map served over TCP by threads inside rank 0's
// process. A get waits on the server until its key is set, so clients never poll. A connection
// refused (no secret, a wrong one) is logged with the address it came from and the reason, and
// connections closed at the cap are counted in the log; the secret itself is never logged.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launch/socket_io.hpp"

namespace ptdp {

// Who may use the store. A network neighbour who can reach the port could otherwise read and
// write every key (UCX worker addresses, NCCL unique ids) and tie up a thread per connection.
struct StoreAccess {
  bool loopback_only = true;          // listen on 127.0.0.1 alone: every rank is on this machine
  std::optional<std::string> secret;  // when set, every connection must prove it holds it
  int max_connections = 64;           // further connections are closed at once
};

class TcpStoreServer {
 public:
  // Listens at `port` (0: a free port, see port()) as `access` says. On destruction it keeps
  // serving connected clients for up to `linger`, so that ranks still reading keys rank 0 wrote
  // just before it finished are not cut off.
  TcpStoreServer(int port, std::chrono::milliseconds linger, StoreAccess access);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

  // On destruction, close every connection at once instead of lingering: for a rank 0 that failed,
  // whose ranks learn of it from their communicator. A stopped rank (SIGSTOP, a debugger) never
  // closes its connection, and would otherwise hold the failed job for the whole linger.
  void skip_linger() {
    std::lock_guard lock(mutex_);
    linger_ = std::chrono::milliseconds(0);
  }

 private:
  struct Client {
    net::FileDescriptor socket;
    std::thread thread;
    bool finished = false;
  };

  void accept_loop();
  void reap_finished_clients();
  void serve(Client* client);
  // Logs the connections closed at the cap since the last report, at most once a second; under mutex_.
  void report_closed_at_cap();
  std::vector<uint8_t> handle(const std::vector<uint8_t>& request);

  net::FileDescriptor listener_;
  net::FileDescriptor wake_read_, wake_write_;
  int port_ = 0;
  std::chrono::milliseconds linger_;
  StoreAccess access_;

  std::mutex mutex_;
  std::condition_variable changed_;  // a value was set, a client left, or the server stops
  std::map<std::string, std::vector<uint8_t>> values_;
  std::list<Client> clients_;
  bool stopping_ = false;
  // Connections closed at the cap since the last line said so (one line a second at most, so
  // that a flood cannot fill the log).
  int closed_at_cap_ = 0;
  std::string latest_at_cap_;
  net::Clock::time_point cap_said_at_{};
  std::thread acceptor_;
};

}  // namespace ptdp
