#pragma once
// TcpStore: the rendezvous every rank of a job shares. Rank 0 serves it (threads in rank 0's
// process) and every rank, rank 0 included, is a client over TCP. A get blocks on the server
// until its key is set; a lost server (rank 0 gone) fails every call at once with a clear error.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launch/socket_io.hpp"
#include "ptdp/rendezvous.hpp"

namespace ptdp {

class TcpStoreServer;

class TcpStore final : public Rendezvous {
 public:
  // Rank 0 starts the server on master_port (0: a free one, see port(); only useful when the
  // other ranks learn it another way) and then connects like everyone else. Connecting retries
  // until `timeout`, so ranks may start before rank 0. `timeout` also bounds every call that
  // takes none.
  TcpStore(std::string master_addr, int master_port, int rank, int world_size,
           std::chrono::milliseconds timeout);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;

  // Adds delta to the counter at key (absent: 0) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // Returns once every rank of the world has entered the barrier of this name as many times as
  // this rank has; throws naming the barrier after the timeout.
  void barrier(const std::string& name);
  void barrier(const std::string& name, std::chrono::milliseconds timeout);

  // Rank 0 after a failure: the server stops serving when this store is destroyed, without
  // lingering for connected ranks (TcpStoreServer::skip_linger). Nothing on other ranks.
  void closing_after_failure();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  int port() const { return port_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  // One request and its answer; throws on a lost connection or a refused request. An empty
  // optional means the server's wait for the key timed out.
  std::optional<std::vector<uint8_t>> call(const std::vector<uint8_t>& request,
                                           const std::string& what, net::Clock::time_point deadline);
  std::optional<std::vector<uint8_t>> wait_for_key(const std::string& key,
                                                   std::chrono::milliseconds timeout);
  std::string where() const;

  std::string master_addr_;
  int port_ = 0;
  int rank_ = 0;
  int world_size_ = 1;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<TcpStoreServer> server_;

  std::mutex mutex_;  // one request at a time on the connection
  net::FileDescriptor socket_;
  std::string lost_;  // why the connection is gone; every later call fails with it
  std::map<std::string, int64_t> barrier_rounds_;
};

}  // namespace ptdp
