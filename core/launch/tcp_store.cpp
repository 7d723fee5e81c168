#include "launch/tcp_store.hpp"

#include <algorithm>
#include <thread>

#include "launch/rendezvous_secret.hpp"
#include "launch/store_handshake.hpp"
#include "launch/store_protocol.hpp"
#include "launch/tcp_store_server.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

using store_protocol::Op;
using store_protocol::Status;

namespace {

// Slack on top of a get's own timeout for the server's answer to travel back.
constexpr std::chrono::milliseconds kAnswerSlack{5000};
constexpr std::chrono::milliseconds kLingerCap{10000};

}  // namespace

TcpStore::TcpStore(std::string master_addr, int master_port, int rank, int world_size,
                   std::chrono::milliseconds timeout)
    : master_addr_(std::move(master_addr)), port_(master_port), rank_(rank),
      world_size_(world_size), timeout_(timeout) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error("rendezvous: rank " + std::to_string(rank) + " is outside world size " +
                std::to_string(world_size));
  if (master_port < 0 || master_port > 65535 || (master_port == 0 && rank != 0))
    throw Error("rendezvous: invalid master port " + std::to_string(master_port) + " for rank " +
                std::to_string(rank));
  const std::optional<std::string> secret = rendezvous_secret();
  const bool local = is_loopback_host(master_addr_);
  // Every rank sees the same environment, so every rank refuses at once, rather than rank 0
  // alone while the others wait out the timeout for a store that never comes.
  if (!local && !secret)
    throw Error("rendezvous: master_addr " + master_addr_ + " can be reached from other machines, and without a "
                "secret anyone who reaches the store could read and write the job's keys: give every rank the "
                "same " + kRendezvousSecretFileVariable + " (a file only you can read: head -c 32 /dev/urandom "
                "> F; chmod 600 F), or " + kRendezvousSecretVariable);
  if (rank == 0) {
    // Each rank keeps one connection; the slack covers reconnects while ranks start.
    StoreAccess access{local, secret, 2 * world_size + 16};
    server_ = std::make_unique<TcpStoreServer>(master_port, std::min(timeout, kLingerCap), std::move(access));
    port_ = server_->port();
  }
  const auto deadline = net::Clock::now() + timeout;
  std::string reason;
  for (;;) {
    socket_ = net::try_connect_tcp(master_addr_, port_, reason);
    if (socket_ || net::Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!socket_)
    throw Error("rendezvous: rank " + std::to_string(rank) + " could not reach the store at " +
                where() + " within " + net::seconds_string(timeout) + ": " + reason +
                " (is rank 0 running, and are the master address and port right?)");
  store_handshake::offer(socket_.get(), secret, deadline, where());
}

TcpStore::~TcpStore() {
  socket_.reset();  // our own connection must not keep rank 0's server lingering
  server_.reset();
}

void TcpStore::closing_after_failure() {
  if (server_) server_->skip_linger();
}

std::string TcpStore::where() const { return master_addr_ + ":" + std::to_string(port_); }

std::optional<std::vector<uint8_t>> TcpStore::call(const std::vector<uint8_t>& request,
                                                   const std::string& what,
                                                   net::Clock::time_point deadline) {
  std::lock_guard lock(mutex_);
  if (!lost_.empty()) throw Error(lost_);
  const std::string prefix = "rendezvous: rank " + std::to_string(rank_) + ": ";
  net::IoResult r = store_protocol::send_frame(socket_.get(), request, deadline);
  std::vector<uint8_t> response;
  if (r == net::IoResult::Done) r = store_protocol::recv_frame(socket_.get(), response, deadline);
  if (r != net::IoResult::Done) {
    // Either way the connection is unusable now (a late answer would be taken for the next one).
    lost_ = prefix + (r == net::IoResult::Closed
                          ? "lost the store at " + where() + " during " + what +
                                " (rank 0 exited or failed)"
                          : "the store at " + where() + " did not answer " + what);
    socket_.reset();
    throw Error(lost_);
  }
  store_protocol::Reader reader(response);
  const auto status = static_cast<Status>(reader.u8());
  std::vector<uint8_t> payload = reader.rest();
  if (status == Status::Failed)
    throw Error(prefix + what + ": " + std::string(payload.begin(), payload.end()));
  if (status == Status::TimedOut) return std::nullopt;
  return payload;
}

void TcpStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  store_protocol::Writer w;
  w.u8(static_cast<uint8_t>(Op::Set)).string(key).bytes(value.data(), value.size());
  call(w.data(), "set '" + key + "'", net::Clock::now() + timeout_);
}

std::optional<std::vector<uint8_t>> TcpStore::wait_for_key(const std::string& key,
                                                           std::chrono::milliseconds timeout) {
  timeout = std::max(timeout, std::chrono::milliseconds(0));
  store_protocol::Writer w;
  w.u8(static_cast<uint8_t>(Op::Get)).string(key).u64(static_cast<uint64_t>(timeout.count()));
  return call(w.data(), "get '" + key + "'", net::Clock::now() + timeout + kAnswerSlack);
}

std::vector<uint8_t> TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::optional<std::vector<uint8_t>> value = wait_for_key(key, timeout);
  if (!value)
    throw Error("rendezvous: rank " + std::to_string(rank_) + ": timed out after " +
                net::seconds_string(timeout) + " waiting for key '" + key + "'");
  return std::move(*value);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  store_protocol::Writer w;
  w.u8(static_cast<uint8_t>(Op::Add)).string(key).u64(static_cast<uint64_t>(delta));
  std::optional<std::vector<uint8_t>> sum = call(w.data(), "add '" + key + "'", net::Clock::now() + timeout_);
  store_protocol::Reader reader(*sum);
  return static_cast<int64_t>(reader.u64());
}

void TcpStore::barrier(const std::string& name) { barrier(name, timeout_); }

void TcpStore::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  int64_t round;
  {
    std::lock_guard lock(mutex_);
    round = barrier_rounds_[name]++;
  }
  const std::string base = "barrier/" + name + "/" + std::to_string(round);
  const int64_t arrived = add(base + "/arrived", 1);
  if (arrived == world_size_) set(base + "/open", {});
  if (!wait_for_key(base + "/open", timeout))
    throw Error("rendezvous: rank " + std::to_string(rank_) + ": barrier '" + name +
                "' timed out after " + net::seconds_string(timeout) + ": " +
                std::to_string(add(base + "/arrived", 0)) + " of " + std::to_string(world_size_) +
                " ranks arrived");
}

}  // namespace ptdp
