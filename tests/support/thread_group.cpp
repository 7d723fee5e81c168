#include "support/thread_group.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace ptdp::test {

using Bytes = std::vector<uint8_t>;

struct ThreadGroupState {
  std::string name;
  int size = 0;
  std::chrono::duration<double> timeout{30.0};

  std::mutex mu;
  std::condition_variable cv;
  bool aborted = false;
  std::string abort_reason;

  // One collective call: what each rank brought, and which operation it said it was.
  struct Round {
    std::vector<Bytes> inputs;
    std::vector<std::string> ops;
    int arrived = 0;
    int departed = 0;
  };
  std::map<uint64_t, Round> rounds;                                 // by call number
  std::map<std::tuple<int, int, int>, std::deque<Bytes>> mailboxes;  // (from, to, tag)
  std::map<std::pair<uint64_t, int>, std::shared_ptr<ThreadGroupState>> children;  // (split, color)

  void abort(const std::string& reason) {
    std::vector<std::shared_ptr<ThreadGroupState>> kids;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!aborted) {
        aborted = true;
        abort_reason = reason;
      }
      for (auto& [key, child] : children) kids.push_back(child);
    }
    cv.notify_all();
    for (auto& child : kids) child->abort(reason);
  }
};

namespace {

bool reducible(DType t) { return t == DType::F32 || t == DType::I32 || t == DType::I64; }

template <class T>
void reduce_into(T* acc, const T* x, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) {
    switch (op) {
      case ReduceOp::Sum: acc[i] += x[i]; break;
      case ReduceOp::Max: acc[i] = x[i] > acc[i] ? x[i] : acc[i]; break;
      case ReduceOp::Min: acc[i] = x[i] < acc[i] ? x[i] : acc[i]; break;
    }
  }
}

// acc op= x, elementwise, for n elements of `dtype`.
void reduce_bytes(void* acc, const void* x, int64_t n, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::F32: reduce_into(static_cast<float*>(acc), static_cast<const float*>(x), n, op); break;
    case DType::I32: reduce_into(static_cast<int32_t*>(acc), static_cast<const int32_t*>(x), n, op); break;
    case DType::I64: reduce_into(static_cast<int64_t*>(acc), static_cast<const int64_t*>(x), n, op); break;
    default: throw Error("unreachable");
  }
}

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

std::string describe(const char* what, const Tensor& t) {
  return std::string(what) + "(" + dtype_name(t.dtype) + " x" + std::to_string(t.numel()) + ")";
}

Bytes bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  return Bytes(p, p + t.bytes());
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroupState> state, int rank)
      : g_(std::move(state)), rank_(rank) {}

  void init(const CommInit& init) override {
    if (init.rank != rank_ || init.size != g_->size)
      fail("init", "was created as rank " + std::to_string(rank_) + " of " + std::to_string(g_->size) +
                       ", not rank " + std::to_string(init.rank) + " of " + std::to_string(init.size));
  }
  int rank() const override { return rank_; }
  int size() const override { return g_->size; }
  std::string name() const override { return g_->name; }
  uint32_t memory_kinds() const override { return memory_bit(MemoryKind::Host); }
  uint32_t capabilities() const override { return capability_bit(CommCapability::MatchesTags); }
  void bind_stream(void*) override {}

  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override {
    Bytes mine(2 * sizeof(int));
    std::memcpy(mine.data(), &color, sizeof(int));
    std::memcpy(mine.data() + sizeof(int), &key, sizeof(int));
    std::vector<Bytes> all = exchange("split", std::move(mine));
    const uint64_t split_index = splits_++;
    if (color < 0) return nullptr;  // like NCCL_SPLIT_NOCOLOR: this rank joins no group
    std::vector<std::pair<int, int>> members;  // (key, old rank) of this color
    for (int r = 0; r < size(); ++r) {
      int c, k;
      std::memcpy(&c, all[r].data(), sizeof(int));
      std::memcpy(&k, all[r].data() + sizeof(int), sizeof(int));
      if (c == color) members.emplace_back(k, r);
    }
    std::sort(members.begin(), members.end());
    int new_rank = 0;
    while (members[new_rank].second != rank_) ++new_rank;
    std::shared_ptr<ThreadGroupState> child;
    {
      std::lock_guard<std::mutex> lock(g_->mu);
      auto& slot = g_->children[{split_index, color}];
      if (!slot) {
        slot = std::make_shared<ThreadGroupState>();
        slot->name = name;
        slot->size = static_cast<int>(members.size());
        slot->timeout = g_->timeout;
      }
      child = slot;
    }
    return std::make_shared<ThreadCommunicator>(child, new_rank);
  }

  void all_reduce(Tensor buffer, ReduceOp op) override {
    check_reducible("all_reduce", buffer);
    std::vector<Bytes> all = exchange(describe("all_reduce", buffer) + " " + op_name(op), bytes_of(buffer));
    std::memcpy(buffer.data, all[0].data(), buffer.bytes());
    for (int r = 1; r < size(); ++r) reduce_bytes(buffer.data, all[r].data(), buffer.numel(), buffer.dtype, op);
  }

  void reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) override {
    check_reducible("reduce_scatter", input);
    check_host("reduce_scatter", output);
    if (input.dtype != output.dtype || input.numel() != output.numel() * size())
      fail("reduce_scatter", "input " + describe("", input) + " must be " + std::to_string(size()) +
                                 " times output " + describe("", output));
    std::vector<Bytes> all = exchange(describe("reduce_scatter", input) + " " + op_name(op), bytes_of(input));
    const size_t chunk = output.bytes();
    std::memcpy(output.data, all[0].data() + rank_ * chunk, chunk);
    for (int r = 1; r < size(); ++r)
      reduce_bytes(output.data, all[r].data() + rank_ * chunk, output.numel(), output.dtype, op);
  }

  void all_gather(const Tensor& input, Tensor output) override {
    check_host("all_gather", input);
    check_host("all_gather", output);
    if (output.bytes() != input.bytes() * size())
      fail("all_gather", "output " + describe("", output) + " must be " + std::to_string(size()) +
                             " times input " + describe("", input));
    std::vector<Bytes> all = exchange(describe("all_gather", input), bytes_of(input));
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<uint8_t*>(output.data) + r * input.bytes(), all[r].data(), input.bytes());
  }

  void broadcast(Tensor buffer, int root) override {
    check_host("broadcast", buffer);
    check_peer("broadcast", root);
    Bytes mine = rank_ == root ? bytes_of(buffer) : Bytes{};
    std::vector<Bytes> all =
        exchange(describe("broadcast", buffer) + " root " + std::to_string(root), std::move(mine));
    if (rank_ != root) std::memcpy(buffer.data, all[root].data(), buffer.bytes());
  }

  void group_start() override { ++group_depth_; }

  void group_end() override {
    if (group_depth_ == 0) fail("group_end", "without a matching group_start");
    if (--group_depth_ > 0) return;
    std::vector<PendingRecv> pending;
    pending.swap(pending_);
    for (PendingRecv& p : pending) complete_recv(p.buffer, p.peer, p.tag);
  }

  // Sends are buffered: they never wait, so any order of sends and receives is deadlock-free.
  void send(const Tensor& buffer, int peer, int tag) override {
    check_host("send", buffer);
    check_peer("send", peer);
    {
      std::lock_guard<std::mutex> lock(g_->mu);
      if (g_->aborted) fail_aborted("send");
      g_->mailboxes[{rank_, peer, tag}].push_back(bytes_of(buffer));
    }
    g_->cv.notify_all();
  }

  void recv(Tensor buffer, int peer, int tag) override {
    check_host("recv", buffer);
    check_peer("recv", peer);
    if (group_depth_ > 0)
      pending_.push_back({buffer, peer, tag});
    else
      complete_recv(buffer, peer, tag);
  }

  void barrier() override { exchange("barrier", {}); }

  void abort(const std::string& reason) override { g_->abort(reason); }

 private:
  struct PendingRecv {
    Tensor buffer;
    int peer;
    int tag;
  };

  [[noreturn]] void fail(const std::string& op, const std::string& why) const {
    throw Error("thread group '" + g_->name + "' rank " + std::to_string(rank_) + ": " + op + " " + why);
  }
  [[noreturn]] void fail_aborted(const std::string& op) const {
    fail(op, "aborted: " + g_->abort_reason);
  }
  void check_host(const char* op, const Tensor& t) const {
    if (t.device.kind != MemoryKind::Host) fail(op, "needs host memory");
  }
  void check_reducible(const char* op, const Tensor& t) const {
    check_host(op, t);
    if (!reducible(t.dtype)) fail(op, std::string("cannot reduce ") + dtype_name(t.dtype));
  }
  void check_peer(const char* op, int peer) const {
    if (peer < 0 || peer >= size())
      fail(op, "peer " + std::to_string(peer) + " is outside the group of " + std::to_string(size()));
  }

  // Waits (with the group's mutex held by `lock`) until `ready` or abort or timeout.
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, const std::string& op, Ready ready,
            const std::function<std::string()>& waiting_for) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(g_->timeout);
    while (!ready()) {
      if (g_->aborted) fail_aborted(op);
      if (g_->cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !g_->aborted)
        fail(op, "timed out after " + std::to_string(g_->timeout.count()) + " s waiting for " + waiting_for());
    }
  }

  // Every rank contributes `mine` to its next collective and gets every rank's contribution.
  std::vector<Bytes> exchange(const std::string& op, Bytes mine) {
    std::unique_lock<std::mutex> lock(g_->mu);
    if (g_->aborted) fail_aborted(op);
    const uint64_t index = calls_++;
    ThreadGroupState::Round& round = g_->rounds[index];
    if (round.inputs.empty()) {
      round.inputs.resize(g_->size);
      round.ops.resize(g_->size);
    }
    round.inputs[rank_] = std::move(mine);
    round.ops[rank_] = op;
    ++round.arrived;
    g_->cv.notify_all();
    wait(lock, op, [&] { return round.arrived == g_->size; }, [&] {
      std::string missing = "ranks";
      for (int r = 0; r < g_->size; ++r)
        if (round.ops[r].empty()) missing.append(" ").append(std::to_string(r));
      return missing;
    });
    std::vector<Bytes> all = round.inputs;
    std::vector<std::string> ops = round.ops;
    if (++round.departed == g_->size) g_->rounds.erase(index);
    lock.unlock();
    for (int r = 0; r < size(); ++r)
      if (ops[r] != op)
        fail(op, "was matched with " + ops[r] + " on rank " + std::to_string(r) +
                     " (collectives must be called in the same order with the same shapes)");
    return all;
  }

  void complete_recv(Tensor buffer, int peer, int tag) {
    const std::string op = "recv from rank " + std::to_string(peer) + " tag " + std::to_string(tag);
    std::unique_lock<std::mutex> lock(g_->mu);
    auto& box = g_->mailboxes[{peer, rank_, tag}];
    wait(lock, op, [&] { return !box.empty(); }, [&] { return std::string("the message"); });
    Bytes message = std::move(box.front());
    box.pop_front();
    lock.unlock();
    if (message.size() != buffer.bytes())
      fail(op, "got " + std::to_string(message.size()) + " bytes into a buffer of " +
                   std::to_string(buffer.bytes()));
    std::memcpy(buffer.data, message.data(), message.size());
  }

  std::shared_ptr<ThreadGroupState> g_;
  int rank_;
  uint64_t calls_ = 0;   // collectives this rank has entered
  uint64_t splits_ = 0;  // splits this rank has entered
  int group_depth_ = 0;
  std::vector<PendingRecv> pending_;
};

}  // namespace

ThreadGroup::ThreadGroup(int size, std::string name, double timeout_s)
    : state_(std::make_shared<ThreadGroupState>()) {
  if (size < 1) throw Error("thread group '" + name + "': size must be at least 1");
  state_->name = std::move(name);
  state_->size = size;
  state_->timeout = std::chrono::duration<double>(timeout_s);
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_shared<ThreadCommunicator>(state_, r));
}

Communicator* ThreadGroup::rank(int r) const { return shared_rank(r).get(); }

std::shared_ptr<Communicator> ThreadGroup::shared_rank(int r) const {
  if (r < 0 || r >= size())
    throw Error("thread group '" + state_->name + "': no rank " + std::to_string(r));
  return ranks_[r];
}

void ThreadGroup::abort(const std::string& reason) { state_->abort(reason); }

void run_ranks(ThreadGroup& group, const std::function<void(int rank)>& fn) {
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!first) first = std::current_exception();
        }
        group.abort("rank " + std::to_string(r) + " failed: " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace ptdp::test
