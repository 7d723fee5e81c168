#include "ucx_communicator.hpp"

#include <algorithm>
#include <numeric>

#include "ptdp/checked_call.hpp"
#include "tag_layout.hpp"

namespace ptdp::comm_ucx {

namespace {

UcxOptions options_from(const PluginContext& context) {
  PTDP_CHECK(context.config, "comm-ucx: made without its configuration table");
  return {context.config->get_string("transports"), context.config->get_float("timeout_s"),
          context.local_world_size >= context.world_size};
}

}  // namespace

UcxCommunicator::UcxCommunicator(const PluginContext& context)
    : options_(options_from(context)), log_(context), made_by_host_(true) {}

UcxCommunicator::UcxCommunicator(UcxOptions options) : options_(std::move(options)) {}

UcxCommunicator::UcxCommunicator(std::shared_ptr<UcxWorld> world, UcxOptions options, uint32_t id,
                                 std::string name, std::vector<int> members, int rank, Device device, void* stream)
    : options_(std::move(options)), world_(std::move(world)), id_(id), name_(std::move(name)),
      members_(std::move(members)), rank_(rank), device_(device), stream_(stream) {}

UcxCommunicator::~UcxCommunicator() {
  if (world_ && !grouped_.empty()) world_->discard(grouped_);
  // Groups and the world may outlive the object the host made, but not the host's log.
  if (made_by_host_) log_.close();
}

std::string UcxCommunicator::context(const char* op) const {
  return "comm-ucx: rank " + std::to_string(rank_) + " (group '" + name_ + "'): " + op + ": ";
}

void UcxCommunicator::require_init(const std::string& ctx) const {
  if (!world_) throw Error(ctx + "init() was not called");
}

void UcxCommunicator::start_collective(const std::string& ctx) {
  world_->check_usable(ctx);
  ++sequence_;
}

uint32_t UcxCommunicator::memory_kinds() const {
  return memory_bit(MemoryKind::Host) | (cuda_memory_built() ? memory_bit(MemoryKind::Cuda) : 0u);
}

uint32_t UcxCommunicator::capabilities() const {
  return capability_bit(CommCapability::MatchesTags) | capability_bit(CommCapability::NamesDeadPeer) |
         capability_bit(CommCapability::SharesDevice);
}

void UcxCommunicator::bind_stream(void* stream) {
  stream_ = stream;
  cuda_memory_ = nullptr;  // found again, ordered after the new stream
}

void UcxCommunicator::check_tensor(const std::string& ctx, const Tensor& t, const char* what) const {
  if (t.numel() > 0 && !t.data) throw Error(ctx + what + " has no data");
  if (t.device.kind == MemoryKind::Host) return;
  if (t.device.kind != MemoryKind::Cuda) throw Error(ctx + what + " is in memory comm-ucx cannot move");
  if (!cuda_memory_built())
    throw Error(ctx + what + " is in CUDA memory, but this comm-ucx was built without CUDA memory support");
  if (device_.kind != MemoryKind::Cuda)
    throw Error(ctx + what + " is in CUDA memory, but this rank was given no CUDA device at init (CommInit::device)");
  if (t.device.index != device_.index)
    throw Error(ctx + what + " is on CUDA device " + std::to_string(t.device.index) + ", this rank's device is " +
                std::to_string(device_.index));
}

BufferMemory& UcxCommunicator::memory_of(const std::string& ctx, const Tensor& t) {
  if (t.device.kind == MemoryKind::Host) return *host_memory_;
  try {
    if (!cuda_memory_) cuda_memory_ = &world_->cuda_memory(device_.index, stream_);
    cuda_memory_->acquire();
  } catch (const std::exception& e) {
    throw Error(ctx + reason_of(e));
  }
  return *cuda_memory_;
}

BufferMemory& UcxCommunicator::memory_of(const std::string& ctx, const Tensor& a, const Tensor& b) {
  if (a.device.kind != b.device.kind)
    throw Error(ctx + "input and output are in different memory (host and CUDA)");
  return memory_of(ctx, a);
}

uint64_t UcxCommunicator::collective_tag(int sender) const {
  return make_tag(id_, world_rank(sender), true, sequence_);
}

void UcxCommunicator::exchange(const std::string& ctx, BufferMemory& memory, const void* send_data,
                               size_t send_bytes, int to, void* recv_data, size_t recv_bytes, int from) {
  std::vector<PostedMessage> transfers;
  const ucs_memory_type_t type = memory.ucx_type();
  if (recv_data)
    transfers.push_back(world_->post_recv(recv_data, recv_bytes, type, from, world_rank(from), collective_tag(from)));
  if (send_data)
    transfers.push_back(world_->post_send(send_data, send_bytes, type, to, world_rank(to), collective_tag(rank_)));
  world_->wait(transfers, ctx);
}

void UcxCommunicator::send_to_each(const std::string& ctx, BufferMemory& memory,
                                   const std::vector<std::pair<int, std::pair<const char*, size_t>>>& to) {
  std::vector<PostedMessage> transfers;
  for (const auto& [peer, data] : to)
    transfers.push_back(world_->post_send(data.first, data.second, memory.ucx_type(), peer, world_rank(peer),
                                          collective_tag(rank_)));
  world_->wait(transfers, ctx);
}

void UcxCommunicator::init(const CommInit& init) {
  if (world_) throw Error(context("init") + "init() was already called");
  // UCX works in the CUDA context current at ucp_init and at each transfer: the rank's device
  // must be current, with its context made, before UCX starts.
  if (init.device.kind == MemoryKind::Cuda) {
    try {
      activate_cuda_device(init.device.index);
    } catch (const std::exception& e) {
      throw Error(context("init") + reason_of(e));
    }
  }
  device_ = init.device;
  world_ = std::make_shared<UcxWorld>(options_, init, log_);
  id_ = 0;
  name_ = "world";
  rank_ = init.rank;
  members_.resize(static_cast<size_t>(init.size));
  std::iota(members_.begin(), members_.end(), 0);
  if (!early_abort_.empty()) world_->abort(early_abort_);
  // Every rank has connected once init returns, so wrong addresses or transports show here.
  const std::string ctx = context("init");
  start_collective(ctx);
  dissemination_barrier(ctx);
}

std::shared_ptr<Communicator> UcxCommunicator::split(int color, int key, const std::string& name) {
  const std::string ctx = context("split");
  require_init(ctx);
  const int n = size();
  int32_t mine[3] = {color, key, static_cast<int32_t>(world_->next_comm_id())};
  std::vector<int32_t> all(static_cast<size_t>(3 * n));
  all_gather(Tensor{mine, DType::I32, {3}, {}}, Tensor{all.data(), DType::I32, {3 * n}, {}});

  // A fresh id above any this group's ranks use, so the new group's tags are its own.
  uint32_t id = 0;
  for (int r = 0; r < n; ++r) id = std::max(id, static_cast<uint32_t>(all[static_cast<size_t>(3 * r + 2)]));
  if (id > kMaxCommId) throw Error(ctx + "more than " + std::to_string(kMaxCommId) + " communicators");
  world_->set_next_comm_id(id + 1);
  if (color < 0) return nullptr;

  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    if (all[static_cast<size_t>(3 * r)] == color) ranks.push_back(r);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return all[static_cast<size_t>(3 * a + 1)] < all[static_cast<size_t>(3 * b + 1)];
  });
  std::vector<int> members;
  int new_rank = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == rank_) new_rank = static_cast<int>(i);
    members.push_back(world_rank(ranks[i]));
  }
  return std::make_shared<UcxCommunicator>(world_, options_, id, name, std::move(members), new_rank, device_, stream_);
}

void UcxCommunicator::group_start() { ++group_depth_; }

void UcxCommunicator::group_end() {
  const std::string ctx = context("group_end");
  require_init(ctx);
  if (group_depth_ == 0) throw Error(ctx + "group_end() without group_start()");
  if (--group_depth_ > 0) return;
  complete_grouped(context("grouped send/recv"));
}

void UcxCommunicator::complete_grouped(const std::string& ctx) {
  try {
    world_->wait(grouped_, ctx);
  } catch (...) {
    staged_.clear();  // failed transfers may still touch their regions: never lend them again
    throw;
  }
  std::vector<Staged> done;
  done.swap(staged_);
  try {
    for (const Staged& s : done) s.memory->unstage(s.caller, s.region, s.bytes, s.receive);
  } catch (const std::exception& e) {
    throw Error(ctx + reason_of(e));
  }
}

void UcxCommunicator::check_point_to_point(const std::string& ctx, const Tensor& buffer, int peer, int tag) const {
  require_init(ctx);
  check_tensor(ctx, buffer, "buffer");
  if (peer < 0 || peer >= size())
    throw Error(ctx + "peer " + std::to_string(peer) + " outside group of " + std::to_string(size()) + " ranks");
  if (tag < 0) throw Error(ctx + "tag " + std::to_string(tag) + " is negative");
  world_->check_usable(ctx);
}

void UcxCommunicator::send(const Tensor& buffer, int peer, int tag) {
  const std::string ctx = context("send");
  check_point_to_point(ctx, buffer, peer, tag);
  BufferMemory& memory = memory_of(ctx, buffer);
  char* region = memory.stage(buffer.data, buffer.bytes(), true);
  staged_.push_back(Staged{&memory, buffer.data, region, buffer.bytes(), false});
  grouped_.push_back(world_->post_send(region, buffer.bytes(), memory.ucx_type(), peer, world_rank(peer),
                                       make_tag(id_, world_rank(rank_), false, static_cast<uint32_t>(tag))));
  if (group_depth_ == 0) complete_grouped(ctx);
}

void UcxCommunicator::recv(Tensor buffer, int peer, int tag) {
  const std::string ctx = context("recv");
  check_point_to_point(ctx, buffer, peer, tag);
  BufferMemory& memory = memory_of(ctx, buffer);
  char* region = memory.stage(buffer.data, buffer.bytes(), false);
  staged_.push_back(Staged{&memory, buffer.data, region, buffer.bytes(), true});
  grouped_.push_back(world_->post_recv(region, buffer.bytes(), memory.ucx_type(), peer, world_rank(peer),
                                       make_tag(id_, world_rank(peer), false, static_cast<uint32_t>(tag))));
  if (group_depth_ == 0) complete_grouped(ctx);
}

void UcxCommunicator::barrier() {
  const std::string ctx = context("barrier");
  require_init(ctx);
  start_collective(ctx);
  dissemination_barrier(ctx);
}

void UcxCommunicator::dissemination_barrier(const std::string& ctx) {
  // Round k: tell rank+k, hear from rank-k. After ceil(log2 n) rounds everyone heard from all.
  const int n = size();
  char token = 0, heard = 0;
  for (int k = 1; k < n; k <<= 1)
    exchange(ctx, *host_memory_, &token, 1, (rank_ + k) % n, &heard, 1, (rank_ - k + n) % n);
}

void UcxCommunicator::abort(const std::string& reason) {
  if (world_) world_->abort(reason);
  else early_abort_ = reason;
}

}  // namespace ptdp::comm_ucx
