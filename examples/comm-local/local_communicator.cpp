#include "local_communicator.hpp"

#include <ptdp/host_reduce.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <utility>


namespace comm_local {

using ptdp::Error;
using ptdp::Tensor;

namespace {

// Collectives travel under this tag, which no user message can have: user tags are non-negative.
constexpr int kCollectiveTag = -1;

std::string count_text(size_t n, const char* what) { return std::to_string(n) + " " + what; }

}  // namespace

LocalCommunicator::LocalCommunicator(std::shared_ptr<SocketMesh> mesh, std::string id, std::string name,
                                     std::vector<int> members, int rank)
    : mesh_(std::move(mesh)), id_(std::move(id)), name_(std::move(name)), members_(std::move(members)), rank_(rank) {}

uint32_t LocalCommunicator::memory_kinds() const { return ptdp::memory_bit(ptdp::MemoryKind::Host); }

uint32_t LocalCommunicator::capabilities() const {
  // Tags: a mailbox per (communicator, tag, sender). Dead peers: a rank waits on each peer of a
  // collective itself, so it names the one that died, or quotes the notice of a peer that saw
  // it die. Not SharesDevice: that is a promise about GPUs, and this moves no GPU memory.
  using ptdp::CommCapability;
  return ptdp::capability_bit(CommCapability::MatchesTags) | ptdp::capability_bit(CommCapability::NamesDeadPeer);
}

std::string LocalCommunicator::where(const std::string& op) const {
  return "comm-local: rank " + std::to_string(world_rank(rank_)) + " (group '" + name_ + "'): " + op + ": ";
}

void LocalCommunicator::check_ready(const std::string& at) const {
  if (!mesh_) throw Error(at + "init() was not called");
  mesh_->check_usable(at);
}

void LocalCommunicator::check_buffer(const std::string& at, const Tensor& t, const char* what) const {
  if (t.device.kind != ptdp::MemoryKind::Host)
    throw Error(at + what + " is in CUDA memory; comm-local moves host memory only");
  if (t.numel() > 0 && !t.data) throw Error(at + what + " has no data");
}

void LocalCommunicator::check_peer(const std::string& at, int peer, int tag) const {
  if (peer < 0 || peer >= size())
    throw Error(at + "peer " + std::to_string(peer) + " is not a rank of this group of " + std::to_string(size()));
  if (tag < 0) throw Error(at + "tag " + std::to_string(tag) + " is negative; tags are 0 or more");
}

LocalCommunicator::Blocks LocalCommunicator::blocks_of(size_t count, int ranks) {
  Blocks blocks;
  for (int r = 0; r <= ranks; ++r) blocks.offset.push_back(count * static_cast<size_t>(r) / static_cast<size_t>(ranks));
  return blocks;
}

void LocalCommunicator::init(const ptdp::CommInit& init) {
  if (mesh_) throw Error(where("init") + "init() was already called");
  if (!aborted_before_init_.empty()) throw Error(where("init") + "aborted before init(): " + aborted_before_init_);
  mesh_ = std::make_shared<SocketMesh>(init, "comm-local: rank " + std::to_string(init.rank) + ": init: ");
  members_.resize(static_cast<size_t>(init.size));
  std::iota(members_.begin(), members_.end(), 0);
  rank_ = init.rank;
}

template <class Part, class Expected>
std::vector<std::vector<char>> LocalCommunicator::exchange(const std::string& at, Part part, Expected expected) {
  // Every send completes without waiting for the peer (SocketMesh), so all ranks can send
  // first and receive after. Starting at rank + 1 spreads the senders over the receivers.
  const int n = size();
  for (int step = 1; step < n; ++step) {
    const int to = (rank_ + step) % n;
    const std::pair<const void*, size_t> data = part(to);
    mesh_->send(at, world_rank(to), id_, kCollectiveTag, data.first, data.second);
  }
  std::vector<std::vector<char>> got(static_cast<size_t>(n));
  for (int step = 1; step < n; ++step) {
    const int from = (rank_ + n - step) % n;
    got[from] = mesh_->receive(at, world_rank(from), id_, kCollectiveTag);
    if (got[from].size() != expected(from))
      throw mesh_->failed(at + "rank " + std::to_string(world_rank(from)) + " sent " +
                          count_text(got[from].size(), "bytes") + " where this rank expected " +
                          std::to_string(expected(from)) + " (do all ranks of the group pass the same sizes?)");
  }
  return got;
}

void LocalCommunicator::reduce_scatter_blocks(const std::string& at, const char* data, const Blocks& blocks,
                                              ptdp::DType dtype, ptdp::ReduceOp op, char* result) {
  const size_t element = ptdp::dtype_size(dtype);
  const size_t mine = blocks.count(rank_) * element;
  const std::vector<std::vector<char>> got = exchange(
      at, [&](int r) { return std::pair<const void*, size_t>(data + blocks.offset[r] * element, blocks.count(r) * element); },
      [&](int) { return mine; });
  // Rank order, whoever this rank is: the bits of the result depend on the order of the sum.
  auto contribution = [&](int r) { return r == rank_ ? data + blocks.offset[r] * element : got[r].data(); };
  std::vector<char> sum(contribution(0), contribution(0) + mine);
  for (int r = 1; r < size(); ++r) ptdp::host_reduce(sum.data(), contribution(r), blocks.count(rank_), dtype, op);
  std::memcpy(result, sum.data(), mine);  // result may be this rank's block of data: written last
}

void LocalCommunicator::all_gather_blocks(const std::string& at, const char* mine, char* data, const Blocks& blocks,
                                          size_t element) {
  const std::vector<std::vector<char>> got = exchange(
      at, [&](int) { return std::pair<const void*, size_t>(mine, blocks.count(rank_) * element); },
      [&](int r) { return blocks.count(r) * element; });
  for (int r = 0; r < size(); ++r)
    if (r != rank_) std::memcpy(data + blocks.offset[r] * element, got[r].data(), got[r].size());
  std::memmove(data + blocks.offset[rank_] * element, mine, blocks.count(rank_) * element);  // in place: no-op
}

void LocalCommunicator::all_reduce(Tensor buffer, ptdp::ReduceOp op) {
  const std::string at = where("all_reduce");
  check_ready(at);
  check_buffer(at, buffer, "buffer");
  if (!ptdp::host_reducible(buffer.dtype))
    throw Error(at + "cannot reduce " + ptdp::dtype_name(buffer.dtype) + " (comm-local reduces f32, bf16, f16, i32, i64)");
  // Each rank reduces one block, then every rank gathers all blocks: each sends about twice
  // its buffer in all, whatever the group size.
  const Blocks blocks = blocks_of(static_cast<size_t>(buffer.numel()), size());
  std::vector<char> reduced(blocks.count(rank_) * ptdp::dtype_size(buffer.dtype));
  reduce_scatter_blocks(at, buffer.as<char>(), blocks, buffer.dtype, op, reduced.data());
  all_gather_blocks(at, reduced.data(), buffer.as<char>(), blocks, ptdp::dtype_size(buffer.dtype));
}

void LocalCommunicator::reduce_scatter(const Tensor& input, Tensor output, ptdp::ReduceOp op) {
  const std::string at = where("reduce_scatter");
  check_ready(at);
  check_buffer(at, input, "input");
  check_buffer(at, output, "output");
  if (input.dtype != output.dtype)
    throw Error(at + "input is " + ptdp::dtype_name(input.dtype) + ", output " + ptdp::dtype_name(output.dtype));
  if (!ptdp::host_reducible(input.dtype))
    throw Error(at + "cannot reduce " + ptdp::dtype_name(input.dtype) + " (comm-local reduces f32, bf16, f16, i32, i64)");
  if (input.numel() != size() * output.numel())
    throw Error(at + "input has " + count_text(static_cast<size_t>(input.numel()), "elements") + ", expected " +
                std::to_string(size()) + " ranks × " + std::to_string(output.numel()) + " (the output)");
  reduce_scatter_blocks(at, input.as<char>(), blocks_of(static_cast<size_t>(input.numel()), size()), input.dtype,
                        op, output.as<char>());
}

void LocalCommunicator::all_gather(const Tensor& input, Tensor output) {
  const std::string at = where("all_gather");
  check_ready(at);
  check_buffer(at, input, "input");
  check_buffer(at, output, "output");
  if (input.dtype != output.dtype)
    throw Error(at + "input is " + ptdp::dtype_name(input.dtype) + ", output " + ptdp::dtype_name(output.dtype));
  if (output.numel() != size() * input.numel())
    throw Error(at + "output has " + count_text(static_cast<size_t>(output.numel()), "elements") + ", expected " +
                std::to_string(size()) + " ranks × " + std::to_string(input.numel()) + " (the input)");
  all_gather_blocks(at, input.as<char>(), output.as<char>(), blocks_of(static_cast<size_t>(output.numel()), size()),
                    ptdp::dtype_size(input.dtype));
}

void LocalCommunicator::broadcast(Tensor buffer, int root) {
  const std::string at = where("broadcast");
  check_ready(at);
  check_buffer(at, buffer, "buffer");
  if (root < 0 || root >= size())
    throw Error(at + "root " + std::to_string(root) + " is not a rank of this group of " + std::to_string(size()));
  if (rank_ == root) {
    for (int r = 0; r < size(); ++r)
      if (r != root) mesh_->send(at, world_rank(r), id_, kCollectiveTag, buffer.data, buffer.bytes());
    return;
  }
  receive_into(at, PostedReceive{buffer, root, kCollectiveTag});
}

void LocalCommunicator::barrier() {
  // Every rank hears from every other before it leaves, so none leaves before the last arrives.
  const std::string at = where("barrier");
  check_ready(at);
  exchange(at, [](int) { return std::pair<const void*, size_t>(nullptr, 0); }, [](int) { return size_t{0}; });
}

std::shared_ptr<ptdp::Communicator> LocalCommunicator::split(int color, int key, const std::string& name) {
  const std::string at = where("split");
  check_ready(at);
  const int32_t mine[2] = {color, key};
  const std::vector<std::vector<char>> got = exchange(
      at, [&](int) { return std::pair<const void*, size_t>(mine, sizeof(mine)); }, [](int) { return sizeof(mine); });
  auto of = [&](int r) {
    int32_t theirs[2];
    std::memcpy(theirs, r == rank_ ? reinterpret_cast<const char*>(mine) : got[r].data(), sizeof(theirs));
    return std::make_pair(theirs[0], theirs[1]);  // color, key
  };
  std::vector<int> ranks;  // of this color, ordered by key, ties by rank here
  for (int r = 0; r < size(); ++r)
    if (of(r).first == color) ranks.push_back(r);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return of(a).second < of(b).second; });
  std::vector<int> members;
  for (int r : ranks) members.push_back(world_rank(r));
  const int new_rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
  // Every rank of this group has split it as often, so they all give the new group this id.
  std::string id = id_ + "/" + std::to_string(splits_++) + "." + std::to_string(color);
  return std::make_shared<LocalCommunicator>(mesh_, std::move(id), name, std::move(members), new_rank);
}

void LocalCommunicator::group_end() {
  const std::string at = where("group_end");
  if (group_depth_ == 0) throw Error(at + "group_end() without group_start()");
  if (--group_depth_ > 0) return;
  // The group's sends went out when they were posted; what is left is to wait for its receives.
  std::vector<PostedReceive> posted;
  posted.swap(posted_);
  for (const PostedReceive& p : posted) receive_into(where("recv (tag " + std::to_string(p.tag) + ")"), p);
}

void LocalCommunicator::send(const Tensor& buffer, int peer, int tag) {
  const std::string at = where("send");
  check_ready(at);
  check_buffer(at, buffer, "buffer");
  check_peer(at, peer, tag);
  mesh_->send(at, world_rank(peer), id_, tag, buffer.data, buffer.bytes());
}

void LocalCommunicator::recv(Tensor buffer, int peer, int tag) {
  const std::string at = where("recv");
  check_ready(at);
  check_buffer(at, buffer, "buffer");
  check_peer(at, peer, tag);
  if (group_depth_ > 0) {
    posted_.push_back(PostedReceive{buffer, peer, tag});
    return;
  }
  receive_into(where("recv (tag " + std::to_string(tag) + ")"), PostedReceive{buffer, peer, tag});
}

void LocalCommunicator::receive_into(const std::string& at, const PostedReceive& posted) {
  const std::vector<char> message = mesh_->receive(at, world_rank(posted.peer), id_, posted.tag);
  if (message.size() != posted.buffer.bytes())
    throw mesh_->failed(at + "rank " + std::to_string(world_rank(posted.peer)) + " sent " +
                        count_text(message.size(), "bytes") + " for a buffer of " + std::to_string(posted.buffer.bytes()));
  std::memcpy(posted.buffer.data, message.data(), message.size());
}

void LocalCommunicator::abort(const std::string& reason) {
  if (mesh_) mesh_->failed("comm-local: rank " + std::to_string(mesh_->rank()) + ": aborted: " + reason);
  else aborted_before_init_ = reason;
}

}  // namespace comm_local

PTDP_PLUGIN_NO_CONFIG(ptdp::PluginKind::Communicator, ptdp::Communicator, comm_local::LocalCommunicator, "comm-local",
                      "1.0.0")
