#include "launch/tcp_store_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "launch/store_handshake.hpp"
#include "launch/store_protocol.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

using store_protocol::Op;
using store_protocol::Status;

namespace {

// A connection has this long to finish the handshake; the ranks' own connect is immediate.
constexpr std::chrono::seconds kHandshakeLimit{10};
constexpr std::chrono::seconds kCapReportEvery{1};

// "10.213.7.2:40112": where a connection came from, for the log.
std::string peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "an unknown address";
  char text[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    port = ntohs(in6->sin6_port);
  }
  return std::string(text) + ":" + std::to_string(port);
}

}  // namespace

TcpStoreServer::TcpStoreServer(int port, std::chrono::milliseconds linger, StoreAccess access)
    : listener_(net::listen_tcp(port, 1024, access.loopback_only)), linger_(linger), access_(std::move(access)) {
  port_ = net::local_port(listener_.get());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("rendezvous: pipe(): ") + std::strerror(errno));
  wake_read_ = net::FileDescriptor(fds[0]);
  wake_write_ = net::FileDescriptor(fds[1]);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  char stop = 1;
  ssize_t ignored = ::write(wake_write_.get(), &stop, 1);
  (void)ignored;
  acceptor_.join();

  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, linger_, [this] {
    for (const Client& c : clients_)
      if (!c.finished) return false;
    return true;
  });
  stopping_ = true;
  for (Client& c : clients_) ::shutdown(c.socket.get(), SHUT_RDWR);
  changed_.notify_all();
  lock.unlock();
  for (Client& c : clients_) c.thread.join();
}

void TcpStoreServer::reap_finished_clients() {
  std::list<Client> done;
  {
    std::lock_guard lock(mutex_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      const auto next = std::next(it);
      // A finished client's thread set `finished` under the lock as its last use of it.
      if (it->finished) done.splice(done.end(), clients_, it);
      it = next;
    }
  }
  for (Client& c : done) c.thread.join();
}

void TcpStoreServer::accept_loop() {
  for (;;) {
    // Woken at least every second, so that the threads of connections that ended are joined
    // (and their stacks freed) whether or not more connections come.
    reap_finished_clients();
    {
      std::lock_guard lock(mutex_);
      report_closed_at_cap();  // what the last second of a flood closed
    }
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    int rc = ::poll(fds, 2, 1000);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client gave up before we accepted; it retries
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard lock(mutex_);
    size_t open = 0;
    for (const Client& c : clients_) open += !c.finished;
    if (open >= static_cast<size_t>(access_.max_connections)) {
      const std::string from = peer_address(fd);
      ::close(fd);  // a flood of connections must not cost a thread each
      ++closed_at_cap_;
      latest_at_cap_ = from;
      report_closed_at_cap();
      continue;
    }
    Client& client = clients_.emplace_back();
    client.socket = net::FileDescriptor(fd);
    client.thread = std::thread([this, &client] { serve(&client); });
  }
}

void TcpStoreServer::report_closed_at_cap() {
  if (closed_at_cap_ == 0 || net::Clock::now() - cap_said_at_ < kCapReportEvery) return;
  spdlog::warn("rendezvous: closed {} connection(s) at once (the latest from {}): {} are open, the cap for this job",
               closed_at_cap_, latest_at_cap_, access_.max_connections);
  closed_at_cap_ = 0;
  cap_said_at_ = net::Clock::now();
}

void TcpStoreServer::serve(Client* client) {
  const int fd = client->socket.get();
  std::vector<uint8_t> request;
  try {
    std::string refusal;
    if (!store_handshake::accept(fd, access_.secret, net::Clock::now() + kHandshakeLimit, &refusal)) {
      if (!refusal.empty()) spdlog::warn("rendezvous: refused a connection from {}: {}", peer_address(fd), refusal);
      throw Error("refused");
    }
    for (;;) {
      if (store_protocol::recv_frame(fd, request, net::Clock::time_point::max()) != net::IoResult::Done)
        break;
      std::vector<uint8_t> response = handle(request);
      if (store_protocol::send_frame(fd, response, net::Clock::time_point::max()) != net::IoResult::Done)
        break;
    }
  } catch (const std::exception&) {
    // A malformed or failing client only loses its own connection.
  }
  std::lock_guard lock(mutex_);
  client->socket = net::FileDescriptor();  // closed now: a finished connection holds no descriptor
  client->finished = true;
  changed_.notify_all();
}

namespace {

std::vector<uint8_t> respond(Status status, const void* data = nullptr, size_t size = 0) {
  store_protocol::Writer w;
  w.u8(static_cast<uint8_t>(status)).bytes(data, size);
  return w.data();
}

std::vector<uint8_t> fail(const std::string& message) {
  return respond(Status::Failed, message.data(), message.size());
}

}  // namespace

std::vector<uint8_t> TcpStoreServer::handle(const std::vector<uint8_t>& request) {
  store_protocol::Reader r(request);
  const auto op = static_cast<Op>(r.u8());
  const std::string key = r.string();
  std::unique_lock lock(mutex_);
  switch (op) {
    case Op::Set: {
      values_[key] = r.rest();
      changed_.notify_all();
      return respond(Status::Ok);
    }
    case Op::Get: {
      const auto timeout = std::chrono::milliseconds(r.u64());
      const bool found = changed_.wait_for(lock, timeout, [&] { return stopping_ || values_.count(key); });
      if (stopping_) return fail("the store on rank 0 is shutting down");
      if (!found) return respond(Status::TimedOut);
      const std::vector<uint8_t>& v = values_[key];
      return respond(Status::Ok, v.data(), v.size());
    }
    case Op::Add: {
      const auto delta = static_cast<int64_t>(r.u64());
      std::vector<uint8_t>& stored = values_[key];
      int64_t value = 0;
      if (!stored.empty()) {
        auto [end, ec] = std::from_chars(reinterpret_cast<const char*>(stored.data()),
                                         reinterpret_cast<const char*>(stored.data() + stored.size()), value);
        if (ec != std::errc() || end != reinterpret_cast<const char*>(stored.data() + stored.size()))
          return fail("key '" + key + "' holds a value that is not a counter");
      }
      value += delta;
      const std::string text = std::to_string(value);
      stored.assign(text.begin(), text.end());
      changed_.notify_all();
      store_protocol::Writer w;
      w.u8(static_cast<uint8_t>(Status::Ok)).u64(static_cast<uint64_t>(value));
      return w.data();
    }
  }
  return fail("unknown store operation " + std::to_string(static_cast<int>(op)));
}

}  // namespace ptdp
