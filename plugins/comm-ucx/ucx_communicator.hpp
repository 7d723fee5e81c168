#pragma once
// UcxCommunicator: the Communicator over UCP tag matching, for host memory and (when built with
// CUDA) CUDA memory, which UCX moves with its cuda_copy and cuda_ipc transports; several ranks
// may share one GPU. Operations on CUDA memory first wait for the bound stream, then move and
// reduce (on the GPU) from the host side, and return when the result is in place.
// The world communicator owns a UcxWorld; groups made by split() share it (and its endpoints)
// and tell their messages apart by a communicator id in the tag (tag_layout.hpp).
// Collectives: ring reduce-scatter / all-gather (all-reduce = both) for large buffers, binomial
// trees for small ones, scatter + ring all-gather for large broadcasts, dissemination barrier.
// Sends and receives between group_start() and group_end() are posted at once and must keep
// their buffers valid until group_end(). UCX moves CUDA buffers through the memory's staged
// regions (BufferMemory::stage), never the caller's own. After a failure every call on this communicator and
// the groups sharing its world throws; split() with a negative color returns no group.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptdp/communicator.hpp"
#include "buffer_memory.hpp"
#include "ptdp/plugin.hpp"
#include "ptdp/plugin_log.hpp"
#include "ucx_world.hpp"

namespace ptdp::comm_ucx {

class UcxCommunicator final : public Communicator {
 public:
  explicit UcxCommunicator(const PluginContext& context);
  explicit UcxCommunicator(UcxOptions options);
  // A group made by split().
  UcxCommunicator(std::shared_ptr<UcxWorld> world, UcxOptions options, uint32_t id, std::string name,
                  std::vector<int> members, int rank, Device device, void* stream);
  ~UcxCommunicator() override;

  void init(const CommInit& init) override;
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string name() const override { return name_; }
  uint32_t memory_kinds() const override;
  uint32_t capabilities() const override;
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
  struct Blocks {  // a buffer cut into size() nearly equal blocks of elements
    std::vector<size_t> offset, count;
  };

  // "comm-ucx: rank 2 (group 'tp'): all_reduce: "
  std::string context(const char* op) const;
  void require_init(const std::string& ctx) const;
  // Checks that the communicator is still usable and starts a new collective sequence number;
  // called after argument checks, so a rank with bad arguments does not fall out of step.
  void start_collective(const std::string& ctx);
  void check_tensor(const std::string& ctx, const Tensor& t, const char* what) const;
  // The memory of an operation's tensors (checked by check_tensor), made ready for it.
  BufferMemory& memory_of(const std::string& ctx, const Tensor& t);
  BufferMemory& memory_of(const std::string& ctx, const Tensor& a, const Tensor& b);
  // What send and recv require before posting: a usable communicator, a buffer it can move, a
  // peer inside the group and a non-negative tag.
  void check_point_to_point(const std::string& ctx, const Tensor& buffer, int peer, int tag) const;
  int world_rank(int rank) const { return members_[static_cast<size_t>(rank)]; }
  // Waits for the grouped sends and receives and unstages their regions.
  void complete_grouped(const std::string& ctx);
  uint64_t collective_tag(int sender) const;

  // Posts a receive from `from` (when recv_data is set) and a send to `to` (when send_data is
  // set) under the current collective tag, and waits for both.
  void exchange(const std::string& ctx, BufferMemory& memory, const void* send_data, size_t send_bytes, int to,
                void* recv_data, size_t recv_bytes, int from);

  // Posts sends of the same buffer to every rank in `to` and waits for them.
  void send_to_each(const std::string& ctx, BufferMemory& memory,
                    const std::vector<std::pair<int, std::pair<const char*, size_t>>>& to);
  void dissemination_barrier(const std::string& ctx);
  Blocks blocks_of(size_t count) const;
  void tree_reduce_to_zero(const std::string& ctx, BufferMemory& memory, char* data, size_t count, DType dtype,
                           ReduceOp op);
  void tree_broadcast(const std::string& ctx, BufferMemory& memory, char* data, size_t bytes, int root);
  void ring_reduce_scatter_in_place(const std::string& ctx, BufferMemory& memory, char* data, const Blocks& b,
                                    DType dtype, ReduceOp op);
  void ring_all_gather(const std::string& ctx, BufferMemory& memory, char* data, const Blocks& b,
                       size_t element_size);

  UcxOptions options_;
  PluginLog log_;                    // for the world this communicator makes at init
  const bool made_by_host_ = false;  // the plugin object, which closes the log when it goes
  std::shared_ptr<UcxWorld> world_;
  uint32_t id_ = 0;
  std::string name_ = "world";
  std::vector<int> members_{0};  // world rank of each rank of this group
  int rank_ = 0;
  uint32_t sequence_ = 0;
  int group_depth_ = 0;
  std::vector<PostedMessage> grouped_;
  Device device_;                // the rank's device (CommInit::device), inherited by groups
  void* stream_ = nullptr;       // bound cudaStream_t, inherited by groups
  std::unique_ptr<BufferMemory> host_memory_ = make_host_memory();
  BufferMemory* cuda_memory_ = nullptr;  // the world's memory for stream_, found at first use
  // Regions of grouped sends and receives, unstaged (receives copied out) once they complete.
  struct Staged {
    BufferMemory* memory;
    void* caller;
    char* region;
    size_t bytes;
    bool receive;
  };
  std::vector<Staged> staged_;
  std::string early_abort_;  // abort() before init()
};

}  // namespace ptdp::comm_ucx
