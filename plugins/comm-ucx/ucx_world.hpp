#pragma once
// UcxWorld: the UCX state every communicator of one process shares (context, worker, an
// endpoint to every rank of the world) and the one place that waits. Waiting blocks on the
// worker's event descriptor (ucp_worker_arm + poll) instead of spinning, and it always ends: on
// completion, a failed peer, a failure notice from another rank, abort(), or after the timeout
// passes without progress.
//
// A rank that fails (a peer gone, a timeout, abort) sends a notice to every other rank, so that
// ranks which were waiting on healthy peers stop at once instead of one timeout per hop.
#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "buffer_memory.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::comm_ucx {

// The plugin's options (their defaults are the schema's, plugin_entry.cpp) and what it learns of
// the job.
struct UcxOptions {
  std::string transports;  // UCX_TLS syntax, e.g. "shm,tcp"; empty: UCX's own choice
  double timeout_s;        // > 0 replaces CommInit::timeout_s
  // Every rank of the job is on this host: network transports keep to the loopback device
  // (UCX_NET_DEVICES=lo, unless the environment sets it), so nothing listens on an address other
  // machines can reach; shared memory and the GPU's transports are not network devices.
  bool one_host = false;
};

// One posted send or receive.
struct PostedMessage {
  void* request = nullptr;  // UCX request; null when it completed at once
  ucs_status_t status = UCS_INPROGRESS;
  int peer = 0;             // rank in the posting communicator (for messages)
  int world_peer = 0;
  bool receive = false;
  size_t bytes = 0;
  size_t received = 0;
};

class UcxWorld {
 public:
  // Creates the worker, publishes its address under init.key_prefix and connects to every rank.
  // `log` hears of CUDA memory that cannot be freed when the world goes.
  UcxWorld(const UcxOptions& options, const CommInit& init, PluginLog log);
  ~UcxWorld();
  UcxWorld(const UcxWorld&) = delete;
  UcxWorld& operator=(const UcxWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeout_s() const { return timeout_s_; }

  PostedMessage post_send(const void* data, size_t bytes, ucs_memory_type_t memory, int peer, int world_peer,
                     uint64_t tag);
  PostedMessage post_recv(void* data, size_t bytes, ucs_memory_type_t memory, int peer, int world_peer, uint64_t tag);
  // Waits for every transfer and releases them. On failure it cancels them, marks the world
  // failed, tells the other ranks, and throws ptdp::Error: `context` followed by the reason.
  void wait(std::vector<PostedMessage>& transfers, const std::string& context);
  // Cancels and releases transfers nobody will wait for.
  void discard(std::vector<PostedMessage>& transfers);
  // Throws if the world failed, was aborted, or heard of another rank's failure.
  void check_usable(const std::string& context);
  // Any thread: makes the current and every later wait fail.
  void abort(const std::string& reason);

  // The memory of CUDA operations ordered after `stream` on `device`, shared by every group and
  // kept while the world lives: peers hold IPC mappings of its regions (cuda_memory.cu).
  BufferMemory& cuda_memory(int device, void* stream);

  uint32_t next_comm_id() const { return next_comm_id_; }
  void set_next_comm_id(uint32_t id) { next_comm_id_ = id; }

 private:
  struct Peer {
    UcxWorld* world = nullptr;
    int rank = 0;
    ucp_ep_h ep = nullptr;
    std::atomic<ucs_status_t> failure{UCS_OK};  // set by UCX's error callback
    std::string host;  // the peer's host name, which an error names: on a cluster, "which node?"
  };

  static void on_endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status);
  void create_context(const UcxOptions& options);
  void connect(const CommInit& init);
  void release();  // closes endpoints and frees UCX; idempotent
  void update(PostedMessage& t);
  // What went wrong with a transfer (failed, truncated, short, or its peer is gone), if anything.
  std::optional<std::string> broken_transfer(const PostedMessage& t) const;
  static const PostedMessage* first_pending(const std::vector<PostedMessage>& transfers);
  // Progresses until a failure notice arrives or `grace` passes.
  void await_notice(std::chrono::milliseconds grace);
  void check_interruptions(std::vector<PostedMessage>& transfers, const std::string& context);
  [[noreturn]] void fail(std::vector<PostedMessage>& transfers, const std::string& message, bool tell_others);
  void notify_others(const std::string& message);
  void post_notice_receive();
  // Sleeps until the worker has an event, abort() is called, or `ms` pass.
  void sleep_on_worker(int ms);
  std::string peer_name(const PostedMessage& t) const;
  std::string host_of(int world_rank) const;

  PluginLog log_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_ = 60;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int worker_fd_ = -1;
  int abort_fd_ = -1;  // eventfd: abort() from another thread wakes the waiter
  int busy_streak_ = 0;  // consecutive ucp_worker_arm calls that found work pending
  std::vector<Peer> peers_;
  uint32_t next_comm_id_ = 1;

  std::atomic<bool> aborted_{false};
  std::mutex abort_mutex_;
  std::string abort_reason_;
  std::string failure_;  // first failure; the world is unusable afterwards
  bool notified_ = false;

  void* notice_request_ = nullptr;
  std::array<char, 4096> notice_buffer_{};
  std::string notice_payload_;

  struct StreamMemory {
    void* stream;
    std::unique_ptr<BufferMemory> memory;
  };
  std::vector<StreamMemory> cuda_memories_;  // destroyed after release(): UCX is gone by then
};

}  // namespace ptdp::comm_ucx
