#pragma once
// SocketMesh: the ranks of one machine, every pair joined by one Unix domain stream socket that
// the rendezvous store helps to make. It moves messages, each under the id of the communicator
// it belongs to and a tag, and it owns the rule that every wait ends.
//
// One reader thread per peer drains that peer's socket into a mailbox at once, so a send waits
// only for the peer's reader to take the bytes, never for the matching receive: sends posted in
// any order cannot deadlock, and a receive is a wait on the mailbox.
//
// A failure (a peer gone, a timeout, abort()) is final. The mesh tells every peer why, shuts
// its sockets so that peers waiting on this rank stop at once, and every later call throws.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <ptdp/communicator.hpp>
#include <ptdp/error.hpp>

namespace comm_local {

// A file descriptor that closes itself.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();
  int fd() const { return fd_; }

 private:
  int release();
  int fd_ = -1;
};

class SocketMesh {
 public:
  // Collective over the world. Listens on a socket of its own, publishes where under the store's
  // key_prefix, connects to every lower rank and accepts every higher one; fails naming the rank
  // that did not come within init.timeout_s. `where` starts every error ("comm-local: rank 2: init: ").
  SocketMesh(const ptdp::CommInit& init, const std::string& where);
  ~SocketMesh();
  SocketMesh(const SocketMesh&) = delete;
  SocketMesh& operator=(const SocketMesh&) = delete;

  int rank() const { return rank_; }

  // Sends `bytes` at `data` to world rank `peer` under (comm, tag). Returns when the bytes are
  // in the socket: the caller may reuse its buffer.
  void send(const std::string& where, int peer, const std::string& comm, int tag, const void* data, size_t bytes);

  // The next message from world rank `peer` under (comm, tag), in the order they were sent.
  std::vector<char> receive(const std::string& where, int peer, const std::string& comm, int tag);

  // Throws when the mesh has failed.
  void check_usable(const std::string& where);

  // Makes `error` the mesh's failure (the first one stays), tells the peers and returns it, to
  // be thrown: `throw mesh.failed(...)`.
  ptdp::Error failed(const std::string& error);

 private:
  struct Peer {
    Socket socket;
    std::thread reader;
    std::mutex sending;       // one message at a time on the socket
    bool mid_message = false;  // a send stopped half-way: no notice may follow it
    std::string gone;          // why nothing more comes from this peer; empty while it is there
  };
  using Key = std::tuple<std::string, int, int>;  // communicator id, tag, source world rank

  void connect_all(const ptdp::CommInit& init, const std::string& where);
  void read_from(int peer);
  // 0 once the whole message is in the socket, else the errno that stopped it.
  int write_message(Peer& peer, const std::string& comm, int tag, const void* data, size_t bytes);
  // Why a peer's socket broke, once its reader knows (a notice or the end of the stream).
  std::string gone_reason(int peer, std::unique_lock<std::mutex>& lock);

  int rank_ = 0;
  int size_ = 1;
  std::chrono::duration<double> timeout_{60.0};
  std::vector<std::unique_ptr<Peer>> peers_;  // by world rank; none for this rank

  std::mutex mutex_;  // guards the mailbox, every Peer::gone and failure_
  std::condition_variable changed_;
  std::map<Key, std::deque<std::vector<char>>> mailbox_;
  std::string failure_;
};

}  // namespace comm_local
