#pragma once
// NcclCommunicator: ptdp's Communicator over one NCCL communicator (README.md has the design).
//
// Threads: one thread drives a communicator (init, the operations, split, group_start/end);
// abort() may come from any thread, and the communicator's watchdog thread may abort it too.
// A mutex serializes every NCCL call on the communicator between them.
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "operation_watchdog.hpp"
#include "ptdp/checked_call.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/plugin.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::comm_nccl {

// What a communicator and the groups split from it share: the plugin's configuration (its
// defaults are the schema's, plugin_entry.cpp) and the host's log, which a group may outlive
// (PluginLog).
struct CommSettings {
  double timeout_s;  // 0: use CommInit::timeout_s
  bool synchronous;  // wait for every operation to finish before returning
  PluginLog log;

  static CommSettings from(const PluginContext& context);
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const PluginContext& context);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  void init(const CommInit& init) override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  uint32_t memory_kinds() const override { return memory_bit(MemoryKind::Cuda); }
  // No tags (messages match in posting order), no dead-peer names in collectives, one rank per GPU.
  uint32_t capabilities() const override { return 0; }
  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override;
  void bind_stream(void* stream) override;

  void all_reduce(Tensor buffer, ReduceOp op) override;
  void reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override;
  void all_gather(const Tensor& input, Tensor output) override;
  void broadcast(Tensor buffer, int root) override;

  void group_start() override;
  void group_end() override;
  void send(const Tensor& buffer, int peer, int tag) override;
  void recv(Tensor buffer, int peer, int tag) override;

  void barrier() override;
  void abort(const std::string& reason) override;

 private:
  struct ChildOf {
    const NcclCommunicator& parent;
    std::string name;
  };
  explicit NcclCommunicator(const ChildOf& child);

  // ---- lifecycle and failure handling (nccl_lifecycle.cpp) ----

  // "comm-nccl: rank 3 (group 'tp[pp=0,dp=1]', rank 1 of 2): "
  std::string prefix() const;
  [[noreturn]] void refuse(const std::string& what, const std::string& reason) const;
  // Records the failure (unless one is recorded already), aborts, logs and throws.
  [[noreturn]] void fail(const std::string& failure);
  // Runs body; a ptdp::CallError inside becomes fail("<what>: <its detail>").
  template <class Body>
  void guarded(const std::string& what, Body&& body);

  void require_usable(const std::string& what) const;
  void ensure_usable_locked(const std::string& what) const;
  // Throws the recorded failure once the communicator is down or its NCCL communicator gone.
  void throw_if_down_locked() const;
  // Takes the NCCL communicator out of service and returns it for abort_detached(); nullptr when
  // there is none, or while a group is open (its own thread finishes the job at group_end).
  ncclComm_t detach_locked();
  // ncclCommAbort waits until the kernels already queued have seen the abort flag; it runs
  // without the mutex so that other threads get their errors meanwhile instead of waiting.
  void abort_detached(ncclComm_t comm) const;
  // Destroys the NCCL communicator cleanly; false when that did not work in time.
  bool finalize_locked();
  ncclUniqueId exchange_unique_id(const CommInit& init) const;
  // Second half of split(), on the new group: waits for NCCL and learns rank and size.
  void complete_split(const std::string& what);
  void start_watchdog();
  std::string health_locked() const;
  void on_watchdog_failure(const std::string& failure);
  // Polls a non-blocking call of NCCL's host side until it is done, failed or out of time.
  void settle(const std::string& what);

  // ---- operations (nccl_communicator.cpp) ----

  cudaStream_t stream() const;
  ncclDataType_t checked_type(const std::string& what, const Tensor& tensor,
                              const char* role) const;
  // reduce_scatter and all_gather: one dtype, the whole `size_` times the part, and in place
  // only as this rank's slice of the whole.
  ncclDataType_t checked_slices(const std::string& what, const Tensor& input, const Tensor& output,
                                bool input_is_whole) const;
  ncclRedOp_t checked_reduction(const std::string& what, ReduceOp op) const;
  void check_peer(const std::string& what, int peer, const char* role) const;

  // Enqueues one NCCL call (or adds it to the open group), then tracks or waits for it.
  template <class Launch>
  void enqueue(const std::string& what, bool empty, bool wait, Launch&& launch);
  // Waits for an operation on the GPU (timeout counted from when the GPU reached it).
  void wait_for(const std::string& what, cudaEvent_t begin, cudaEvent_t end);
  void finish_enqueued(const std::string& what, cudaEvent_t begin, ncclResult_t launched,
                       bool wait);

  CommSettings settings_;
  const bool made_by_host_;  // the plugin object, which closes the log when it goes
  double timeout_s_ = 0.0;  // in effect after init
  int world_rank_ = 0;      // this process in the world, for messages
  int rank_ = 0;
  int size_ = 1;            // 0 while a split group waits for NCCL to say
  std::string name_ = "world";
  int device_ = -1;
  // The stream this communicator created; groups split from it enqueue on it too.
  std::shared_ptr<CUstream_st> own_stream_;
  cudaStream_t bound_stream_ = nullptr;  // touched by the driving thread only

  mutable std::mutex mutex_;  // guards what follows
  ncclComm_t comm_ = nullptr;
  bool initialized_ = false;
  std::string failure_;  // why the communicator is unusable; empty while healthy
  int group_depth_ = 0;
  std::thread::id group_thread_;
  std::vector<std::string> group_ops_;
  cudaEvent_t group_begin_ = nullptr;
  // Where ncclCommSplit stores the new handle, from NCCL's thread. A member, not the new
  // group's field: if the split is cut short the new group goes away at once, while NCCL may
  // still write here until the parent's abort has joined the split job.
  ncclComm_t split_result_ = nullptr;
  std::unique_ptr<OperationWatchdog> watchdog_;  // set and reset under the mutex
};

template <class Body>
void NcclCommunicator::guarded(const std::string& what, Body&& body) {
  try {
    body();
  } catch (const CallError& e) {
    fail(what + ": " + e.detail());
  }
}

}  // namespace ptdp::comm_nccl
