#pragma once
// Blocking TCP helpers with deadlines, shared by the rendezvous store's client and server and by
// the local launcher. Every failure throws ptdp::Error with the peer and the reason.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ptdp::net {

using Clock = std::chrono::steady_clock;

// Owns a file descriptor; closes it once.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();
  int get() const { return fd_; }
  int release();
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// A listening socket on every interface, or on 127.0.0.1 alone; port 0 picks a free one.
FileDescriptor listen_tcp(int port, int backlog, bool loopback_only = false);
int local_port(int socket_fd);

// Connects to host:port once; returns an invalid descriptor and the reason when it fails.
FileDescriptor try_connect_tcp(const std::string& host, int port, std::string& reason);

// A port that nothing listens on right now (bound and released; the caller binds it soon).
int pick_free_port();

enum class IoResult { Done, Closed, TimedOut };

// Writes or reads exactly `size` bytes before `deadline`. Closed means the peer went away
// (EOF, reset, broken pipe); other socket errors throw.
IoResult send_all(int fd, const void* data, size_t size, Clock::time_point deadline);
IoResult recv_all(int fd, void* data, size_t size, Clock::time_point deadline);

// "5 s", "0.25 s": durations in messages.
std::string seconds_string(std::chrono::duration<double> d);

}  // namespace ptdp::net
