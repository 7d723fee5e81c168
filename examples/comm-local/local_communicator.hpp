#pragma once
// LocalCommunicator: ptdp's Communicator for the host memory of ranks on one machine, over the
// SocketMesh that init() builds. The world and every group split from it share that mesh; a
// group's messages carry its id (the world's, then one step per split), so groups never see
// each other's messages.
//
// Collectives are direct: each rank sends to every other rank of the group and reduces what it
// gets in group rank order, so every rank ends with the same bits. All-reduce is a
// reduce-scatter into one block per rank followed by an all-gather of the blocks.
// Sends go out at once, even inside group_start()/group_end(); receives posted in a group are
// waited for at group_end().
#include <memory>
#include <string>
#include <vector>

#include <ptdp/communicator.hpp>
#include <ptdp/plugin.hpp>

#include "socket_mesh.hpp"

namespace comm_local {

class LocalCommunicator final : public ptdp::Communicator {
 public:
  explicit LocalCommunicator(const ptdp::PluginContext&) {}
  // A group made by split().
  LocalCommunicator(std::shared_ptr<SocketMesh> mesh, std::string id, std::string name, std::vector<int> members,
                    int rank);

  void init(const ptdp::CommInit& init) override;
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string name() const override { return name_; }
  uint32_t memory_kinds() const override;
  uint32_t capabilities() const override;
  std::shared_ptr<ptdp::Communicator> split(int color, int key, const std::string& name) override;
  void bind_stream(void*) override {}  // host memory: every call completes before it returns

  void all_reduce(ptdp::Tensor buffer, ptdp::ReduceOp op) override;
  void reduce_scatter(const ptdp::Tensor& input, ptdp::Tensor output, ptdp::ReduceOp op) override;
  void all_gather(const ptdp::Tensor& input, ptdp::Tensor output) override;
  void broadcast(ptdp::Tensor buffer, int root) override;

  void group_start() override { ++group_depth_; }
  void group_end() override;
  void send(const ptdp::Tensor& buffer, int peer, int tag) override;
  void recv(ptdp::Tensor buffer, int peer, int tag) override;

  void barrier() override;
  void abort(const std::string& reason) override;

 private:
  // Where each rank's block of a buffer of `count` elements starts (offset[size()] = count).
  struct Blocks {
    std::vector<size_t> offset;
    size_t count(int r) const { return offset[r + 1] - offset[r]; }
  };
  static Blocks blocks_of(size_t count, int ranks);
  struct PostedReceive {
    ptdp::Tensor buffer;
    int peer;
    int tag;
  };

  // "comm-local: rank 2 (group 'tp'): all_reduce: ", the start of every error.
  std::string where(const std::string& op) const;
  // Refuses calls before init() and after a failure, and buffers it cannot move.
  void check_ready(const std::string& at) const;
  void check_buffer(const std::string& at, const ptdp::Tensor& t, const char* what) const;
  void check_peer(const std::string& at, int peer, int tag) const;
  int world_rank(int r) const { return members_[r]; }

  // Sends part(j) to every other rank j of the group, then returns what each sent here (empty
  // for this rank), checking that rank j sent expected(j) bytes.
  template <class Part, class Expected>
  std::vector<std::vector<char>> exchange(const std::string& at, Part part, Expected expected);
  // The collective halves: every rank's block r of `data` reduced into `result` on rank r, and
  // every rank's `mine` gathered into block r of `data`.
  void reduce_scatter_blocks(const std::string& at, const char* data, const Blocks& blocks, ptdp::DType dtype,
                             ptdp::ReduceOp op, char* result);
  void all_gather_blocks(const std::string& at, const char* mine, char* data, const Blocks& blocks,
                         size_t element_bytes);
  void receive_into(const std::string& at, const PostedReceive& posted);

  std::shared_ptr<SocketMesh> mesh_;
  std::string id_ = "w";  // on the wire: tells this group's messages from other groups'
  std::string name_ = "world";
  std::vector<int> members_{0};  // the world rank of each rank of this group
  int rank_ = 0;
  int splits_ = 0;  // how many groups were split from this one: the next one's id
  int group_depth_ = 0;
  std::vector<PostedReceive> posted_;
  std::string aborted_before_init_;
};

}  // namespace comm_local
