#include "launch/socket_io.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "ptdp/error.hpp"

namespace ptdp::net {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() { reset(); }

int FileDescriptor::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void FileDescriptor::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

FileDescriptor listen_tcp(int port, int backlog, bool loopback_only) {
  FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw Error(std::string("rendezvous: socket(): ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(loopback_only ? INADDR_LOOPBACK : INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    throw Error("rendezvous: cannot listen on port " + std::to_string(port) + ": " +
                std::strerror(errno));
  if (::listen(fd.get(), backlog) != 0)
    throw Error("rendezvous: listen() on port " + std::to_string(port) + ": " + std::strerror(errno));
  return fd;
}

int local_port(int socket_fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw Error(std::string("rendezvous: getsockname(): ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

FileDescriptor try_connect_tcp(const std::string& host, int port, std::string& reason) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) {
    reason = std::string("cannot resolve host: ") + ::gai_strerror(rc);
    return FileDescriptor();
  }
  FileDescriptor fd;
  reason = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    FileDescriptor candidate(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!candidate) {
      reason = std::strerror(errno);
      continue;
    }
    if (::connect(candidate.get(), a->ai_addr, a->ai_addrlen) == 0) {
      int one = 1;
      ::setsockopt(candidate.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fd = std::move(candidate);
      break;
    }
    reason = std::strerror(errno);
  }
  ::freeaddrinfo(found);
  return fd;
}

int pick_free_port() {
  FileDescriptor fd = listen_tcp(0, 1);
  return local_port(fd.get());
}

namespace {

// Waits until fd is ready for `events` or the deadline passes.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR)
      throw Error(std::string("rendezvous: poll(): ") + std::strerror(errno));
  }
}

bool is_disconnect(int err) {
  return err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ECONNABORTED ||
         err == ETIMEDOUT || err == EHOSTUNREACH;
}

}  // namespace

IoResult send_all(int fd, const void* data, size_t size, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    if (!wait_ready(fd, POLLOUT, deadline)) return IoResult::TimedOut;
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      if (is_disconnect(errno)) return IoResult::Closed;
      throw Error(std::string("rendezvous: send(): ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return IoResult::Done;
}

IoResult recv_all(int fd, void* data, size_t size, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    if (!wait_ready(fd, POLLIN, deadline)) return IoResult::TimedOut;
    ssize_t n = ::recv(fd, p, size, MSG_DONTWAIT);
    if (n == 0) return IoResult::Closed;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      if (is_disconnect(errno)) return IoResult::Closed;
      throw Error(std::string("rendezvous: recv(): ") + std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return IoResult::Done;
}

std::string seconds_string(std::chrono::duration<double> d) {
  std::ostringstream s;
  s << d.count() << " s";
  return s.str();
}

}  // namespace ptdp::net
