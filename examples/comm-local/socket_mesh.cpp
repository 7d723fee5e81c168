#include "socket_mesh.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace comm_local {

namespace {

using Clock = std::chrono::steady_clock;

// What precedes every message on a socket. A header without a communicator id is a failure
// notice: its payload says why the sender stopped.
struct Header {
  uint32_t comm_bytes;
  int32_t tag;
  uint64_t payload_bytes;
};

std::string seconds(std::chrono::duration<double> d) {
  std::ostringstream out;
  out << d.count() << " s";
  return out.str();
}

std::string system_error(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// Blocks until `bytes` are read; false when the peer closed the socket first.
bool read_exact(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ECONNRESET) return false;
      throw ptdp::Error(system_error("recv"));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// Waits until fd can be read, for at most until `deadline`; false when the time is up.
bool readable_by(int fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) throw ptdp::Error(system_error("poll"));
  }
}

// The rank's entry in the store: its host name, a newline, the socket's address.
std::string address_key(const ptdp::CommInit& init, int rank) {
  return init.key_prefix + "/comm-local/address/" + std::to_string(rank);
}

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

SocketMesh::SocketMesh(const ptdp::CommInit& init, const std::string& where)
    : rank_(init.rank), size_(init.size), timeout_(init.timeout_s) {
  if (!init.store) throw ptdp::Error(where + "CommInit has no rendezvous store");
  if (init.size < 1 || init.rank < 0 || init.rank >= init.size)
    throw ptdp::Error(where + "rank " + std::to_string(init.rank) + " of a world of " + std::to_string(init.size));
  for (int r = 0; r < size_; ++r) peers_.push_back(r == rank_ ? nullptr : std::make_unique<Peer>());
  connect_all(init, where);
  // Reading starts once every socket is there, so the handshakes above had the sockets alone.
  for (int r = 0; r < size_; ++r)
    if (peers_[r]) peers_[r]->reader = std::thread([this, r] { read_from(r); });
}

void SocketMesh::connect_all(const ptdp::CommInit& init, const std::string& where) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  const std::string host = this_host();

  // Listen first, with room for every peer, so that a peer's connect() never waits for accept().
  // Binding to a bare AF_UNIX address lets the kernel pick a unique name in the abstract
  // namespace: nothing on disk to clean up, even after a crash.
  Socket listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  socklen_t length = sizeof(sa_family_t);
  if (listener.fd() < 0 || ::bind(listener.fd(), reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener.fd(), size_) != 0)
    throw ptdp::Error(where + system_error("listening socket"));
  length = sizeof(address);
  ::getsockname(listener.fd(), reinterpret_cast<sockaddr*>(&address), &length);
  std::vector<uint8_t> entry(host.begin(), host.end());
  entry.push_back('\n');
  entry.insert(entry.end(), reinterpret_cast<uint8_t*>(&address), reinterpret_cast<uint8_t*>(&address) + length);
  init.store->set(address_key(init, rank_), entry);

  // Connect to every lower rank and say who this is.
  for (int peer = 0; peer < rank_; ++peer) {
    std::vector<uint8_t> theirs;
    try {
      theirs = init.store->get(address_key(init, peer), std::chrono::duration_cast<std::chrono::milliseconds>(timeout_));
    } catch (const std::exception& e) {
      throw ptdp::Error(where + "rank " + std::to_string(peer) + " did not publish its address within " +
                        seconds(timeout_) + ": " + e.what());
    }
    const auto newline = std::find(theirs.begin(), theirs.end(), uint8_t{'\n'});
    const std::string their_host(theirs.begin(), newline);
    if (newline == theirs.end() || their_host != host)
      throw ptdp::Error(where + "comm-local joins the ranks of one machine, but rank " + std::to_string(peer) +
                        " runs on '" + their_host + "' and this rank on '" + host + "'");
    sockaddr_un to{};
    const socklen_t to_length = static_cast<socklen_t>(std::min(theirs.end() - newline - 1, std::ptrdiff_t{sizeof(to)}));
    std::memcpy(&to, &*(newline + 1), to_length);
    Socket socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const int32_t me = rank_;
    if (socket.fd() < 0 || ::connect(socket.fd(), reinterpret_cast<sockaddr*>(&to), to_length) != 0 ||
        ::send(socket.fd(), &me, sizeof(me), MSG_NOSIGNAL) != sizeof(me))
      throw ptdp::Error(where + "cannot connect to rank " + std::to_string(peer) + ": " + std::strerror(errno));
    peers_[peer]->socket = std::move(socket);
  }

  // Accept every higher rank; each says who it is first.
  for (int waiting = size_ - 1 - rank_; waiting > 0; --waiting) {
    if (!readable_by(listener.fd(), deadline)) {
      std::string missing;
      for (int peer = rank_ + 1; peer < size_; ++peer)
        if (peers_[peer]->socket.fd() < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(peer);
      throw ptdp::Error(where + (waiting == 1 ? "rank " : "ranks ") + missing + " did not connect within " +
                        seconds(timeout_));
    }
    Socket socket(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    int32_t peer = -1;
    if (socket.fd() < 0 || !readable_by(socket.fd(), deadline) || !read_exact(socket.fd(), &peer, sizeof(peer)))
      throw ptdp::Error(where + "a peer connected but did not say which rank it is");
    if (peer <= rank_ || peer >= size_ || peers_[peer]->socket.fd() >= 0)
      throw ptdp::Error(where + "a peer connected as rank " + std::to_string(peer) + ", which is not a rank above " +
                        std::to_string(rank_) + " still to come");
    peers_[peer]->socket = std::move(socket);
  }

  // A send that makes no progress for the timeout fails (EAGAIN) instead of blocking forever.
  timeval limit{};
  limit.tv_sec = static_cast<time_t>(timeout_.count());
  limit.tv_usec = static_cast<suseconds_t>((timeout_.count() - static_cast<double>(limit.tv_sec)) * 1e6);
  for (auto& peer : peers_)
    if (peer) ::setsockopt(peer->socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
}

SocketMesh::~SocketMesh() {
  for (auto& peer : peers_)
    if (peer) ::shutdown(peer->socket.fd(), SHUT_RDWR);  // wakes the reader
  for (auto& peer : peers_)
    if (peer && peer->reader.joinable()) peer->reader.join();
}

void SocketMesh::read_from(int peer) {
  const int fd = peers_[peer]->socket.fd();
  std::string gone = "closed its connection";
  try {
    for (;;) {
      Header header;
      if (!read_exact(fd, &header, sizeof(header))) break;
      std::string comm(header.comm_bytes, '\0');
      std::vector<char> payload(header.payload_bytes);
      if (!read_exact(fd, comm.data(), comm.size()) || !read_exact(fd, payload.data(), payload.size())) {
        gone = "closed its connection in the middle of a message";
        break;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (comm.empty()) {  // a failure notice; the connection closes next
        peers_[peer]->gone = "failed: " + std::string(payload.begin(), payload.end());
      } else {
        mailbox_[Key{std::move(comm), header.tag, peer}].push_back(std::move(payload));
      }
      changed_.notify_all();
    }
  } catch (const std::exception& e) {
    gone = std::string("broke its connection: ") + e.what();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (peers_[peer]->gone.empty()) peers_[peer]->gone = gone;
  changed_.notify_all();
}

int SocketMesh::write_message(Peer& peer, const std::string& comm, int tag, const void* data, size_t bytes) {
  const Header header{static_cast<uint32_t>(comm.size()), tag, bytes};
  iovec parts[3] = {{const_cast<Header*>(&header), sizeof(header)},
                    {const_cast<char*>(comm.data()), comm.size()},
                    {const_cast<void*>(data), bytes}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = 3;
  size_t left = sizeof(header) + comm.size() + bytes;
  peer.mid_message = true;
  while (left > 0) {
    const ssize_t n = ::sendmsg(peer.socket.fd(), &message, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    left -= static_cast<size_t>(n);
    for (size_t done = static_cast<size_t>(n); done > 0 && message.msg_iovlen > 0;) {  // skip what went
      iovec& first = message.msg_iov[0];
      const size_t step = std::min(done, first.iov_len);
      first.iov_base = static_cast<char*>(first.iov_base) + step;
      first.iov_len -= step;
      done -= step;
      if (first.iov_len == 0) ++message.msg_iov, --message.msg_iovlen;
    }
  }
  peer.mid_message = false;
  return 0;
}

void SocketMesh::send(const std::string& where, int peer, const std::string& comm, int tag, const void* data,
                      size_t bytes) {
  check_usable(where);
  if (peer == rank_) {  // to itself: straight into the mailbox
    const char* p = static_cast<const char*>(data);
    std::lock_guard<std::mutex> lock(mutex_);
    mailbox_[Key{comm, tag, peer}].emplace_back(p, p + bytes);
    changed_.notify_all();
    return;
  }
  Peer& to = *peers_[peer];
  int problem = 0;
  {
    std::lock_guard<std::mutex> lock(to.sending);
    problem = write_message(to, comm, tag, data, bytes);
  }
  if (problem == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!failure_.empty()) throw ptdp::Error(where + "stopped: " + failure_);
  const std::string error = problem == EAGAIN || problem == EWOULDBLOCK  // SO_SNDTIMEO ran out
      ? where + "rank " + std::to_string(peer) + " took no data for " + seconds(timeout_)
      : where + "rank " + std::to_string(peer) + " " + gone_reason(peer, lock);
  lock.unlock();
  throw failed(error);
}

std::vector<char> SocketMesh::receive(const std::string& where, int peer, const std::string& comm, int tag) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::deque<std::vector<char>>& queue = mailbox_[Key{comm, tag, peer}];
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout_);
  std::string error;
  for (;;) {
    if (!failure_.empty()) throw ptdp::Error(where + "stopped: " + failure_);
    if (!queue.empty()) {
      std::vector<char> message = std::move(queue.front());
      queue.pop_front();
      return message;
    }
    if (peer != rank_ && !peers_[peer]->gone.empty()) {
      error = where + "rank " + std::to_string(peer) + " " + peers_[peer]->gone;
      break;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && queue.empty() && failure_.empty()) {
      error = where + "timed out after " + seconds(timeout_) + " waiting for rank " + std::to_string(peer);
      break;
    }
  }
  lock.unlock();
  throw failed(error);
}

std::string SocketMesh::gone_reason(int peer, std::unique_lock<std::mutex>& lock) {
  changed_.wait_for(lock, timeout_, [&] { return !peers_[peer]->gone.empty(); });
  return peers_[peer]->gone.empty() ? "broke its connection" : peers_[peer]->gone;
}

void SocketMesh::check_usable(const std::string& where) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) throw ptdp::Error(where + "stopped: " + failure_);
}

ptdp::Error SocketMesh::failed(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) return ptdp::Error(error);
    failure_ = error;
    changed_.notify_all();
  }
  // Tell each peer why, so that its error names the cause rather than this rank. Best effort:
  // a socket that is busy or stays full for a second closes without a notice.
  for (auto& peer : peers_) {
    if (!peer) continue;
    std::unique_lock<std::mutex> sending(peer->sending, std::try_to_lock);
    if (sending && !peer->mid_message) {
      timeval second{1, 0};
      ::setsockopt(peer->socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &second, sizeof(second));
      write_message(*peer, "", 0, error.data(), error.size());
    }
    ::shutdown(peer->socket.fd(), SHUT_RDWR);  // peers waiting on this rank stop now
  }
  return ptdp::Error(error);
}

}  // namespace comm_local
