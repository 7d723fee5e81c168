// The collective algorithms of UcxCommunicator. Ranks are those of the group; every message
// of one collective carries that collective's sequence number in its tag.
#include <algorithm>
#include <cstring>

#include "ptdp/host_reduce.hpp"
#include "ucx_communicator.hpp"

namespace ptdp::comm_ucx {

namespace {

// Below this many bytes a tree's log2(n) latency beats a ring's 2(n-1) steps.
constexpr size_t kTreeLimitBytes = 64 * 1024;

int wrap(int r, int n) { return ((r % n) + n) % n; }

}  // namespace

UcxCommunicator::Blocks UcxCommunicator::blocks_of(size_t count) const {
  const size_t n = static_cast<size_t>(size());
  Blocks b;
  size_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t c = count / n + (i < count % n ? 1 : 0);
    b.offset.push_back(offset);
    b.count.push_back(c);
    offset += c;
  }
  return b;
}

void UcxCommunicator::ring_reduce_scatter_in_place(const std::string& ctx, BufferMemory& memory, char* data,
                                                   const Blocks& b, DType dtype, ReduceOp op) {
  // Step s: pass on block r-s-1 (holding s+1 contributions), take in block r-s-2 and add ours.
  // After n-1 steps block r holds every rank's contribution.
  const int n = size(), right = wrap(rank_ + 1, n), left = wrap(rank_ - 1, n);
  const size_t es = dtype_size(dtype);
  char* incoming = memory.scratch(*std::max_element(b.count.begin(), b.count.end()) * es);
  for (int s = 0; s < n - 1; ++s) {
    const size_t out = static_cast<size_t>(wrap(rank_ - s - 1, n)), in = static_cast<size_t>(wrap(rank_ - s - 2, n));
    exchange(ctx, memory, data + b.offset[out] * es, b.count[out] * es, right, incoming, b.count[in] * es, left);
    memory.reduce(data + b.offset[in] * es, incoming, b.count[in], dtype, op);
  }
}

void UcxCommunicator::ring_all_gather(const std::string& ctx, BufferMemory& memory, char* data, const Blocks& b,
                                      size_t es) {
  // Rank r starts with block r; step s passes on block r-s and takes in block r-s-1.
  const int n = size(), right = wrap(rank_ + 1, n), left = wrap(rank_ - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    const size_t out = static_cast<size_t>(wrap(rank_ - s, n)), in = static_cast<size_t>(wrap(rank_ - s - 1, n));
    exchange(ctx, memory, data + b.offset[out] * es, b.count[out] * es, right, data + b.offset[in] * es,
             b.count[in] * es, left);
  }
}

void UcxCommunicator::tree_reduce_to_zero(const std::string& ctx, BufferMemory& memory, char* data, size_t count,
                                          DType dtype, ReduceOp op) {
  // Binomial tree: at level `mask` a rank with that bit set hands its partial result to
  // rank - mask and drops out.
  const int n = size();
  const size_t bytes = count * dtype_size(dtype);
  char* incoming = memory.scratch(bytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    if (rank_ & mask) {
      exchange(ctx, memory, data, bytes, rank_ - mask, nullptr, 0, 0);
      return;
    }
    if (rank_ + mask < n) {
      exchange(ctx, memory, nullptr, 0, 0, incoming, bytes, rank_ + mask);
      memory.reduce(data, incoming, count, dtype, op);
    }
  }
}

void UcxCommunicator::tree_broadcast(const std::string& ctx, BufferMemory& memory, char* data, size_t bytes,
                                     int root) {
  // Binomial tree over ranks renumbered so that the root is 0.
  const int n = size(), me = wrap(rank_ - root, n);
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (me & mask) {
      exchange(ctx, memory, nullptr, 0, 0, data, bytes, wrap(me - mask + root, n));
      break;
    }
  }
  std::vector<std::pair<int, std::pair<const char*, size_t>>> children;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (me + mask < n) children.push_back({wrap(me + mask + root, n), {data, bytes}});
  send_to_each(ctx, memory, children);
}

void UcxCommunicator::all_reduce(Tensor buffer, ReduceOp op) {
  const std::string ctx = context("all_reduce");
  require_init(ctx);
  check_tensor(ctx, buffer, "buffer");
  if (!host_reducible(buffer.dtype))
    throw Error(ctx + "cannot reduce " + dtype_name(buffer.dtype) + " tensors (supported: f32, bf16, f16, i32, i64)");
  start_collective(ctx);
  const size_t count = static_cast<size_t>(buffer.numel());
  if (size() == 1 || count == 0) return;
  BufferMemory& memory = memory_of(ctx, buffer);
  char* data = memory.stage(buffer.data, buffer.bytes(), true);
  if (buffer.bytes() < kTreeLimitBytes || count < static_cast<size_t>(size())) {
    tree_reduce_to_zero(ctx, memory, data, count, buffer.dtype, op);
    ++sequence_;  // the broadcast is a collective of its own
    tree_broadcast(ctx, memory, data, buffer.bytes(), 0);
  } else {
    const Blocks b = blocks_of(count);
    ring_reduce_scatter_in_place(ctx, memory, data, b, buffer.dtype, op);
    ring_all_gather(ctx, memory, data, b, dtype_size(buffer.dtype));
  }
  memory.unstage(buffer.data, data, buffer.bytes(), true);
}

void UcxCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  const std::string ctx = context("reduce_scatter");
  require_init(ctx);
  check_tensor(ctx, input, "input");
  check_tensor(ctx, output, "output");
  if (input.dtype != output.dtype)
    throw Error(ctx + "input is " + dtype_name(input.dtype) + " but output is " + dtype_name(output.dtype));
  if (!host_reducible(input.dtype))
    throw Error(ctx + "cannot reduce " + dtype_name(input.dtype) + " tensors (supported: f32, bf16, f16, i32, i64)");
  const int n = size();
  if (input.numel() != n * output.numel())
    throw Error(ctx + "input has " + std::to_string(input.numel()) + " elements, expected " + std::to_string(n) +
                " ranks x output " + std::to_string(output.numel()));
  start_collective(ctx);
  const size_t count = static_cast<size_t>(output.numel()), bytes = output.bytes();
  const char* in = static_cast<const char*>(input.data);
  if (count == 0) return;
  BufferMemory& memory = memory_of(ctx, input, output);
  if (n == 1) {
    memory.copy(output.data, in, bytes);
    return;
  }
  // The ring of ring_reduce_scatter_in_place, reading the caller's input and carrying the
  // partial sums in two scratch blocks (one travelling out, one coming in). UCX only ever moves
  // the scratch blocks, so the caller's input needs no staging.
  const int right = wrap(rank_ + 1, n), left = wrap(rank_ - 1, n);
  char* incoming = memory.scratch(2 * bytes);
  char* outgoing = incoming + bytes;
  memory.copy(outgoing, in + static_cast<size_t>(wrap(rank_ - 1, n)) * bytes, bytes);
  for (int s = 0; s < n - 1; ++s) {
    const size_t in_block = static_cast<size_t>(wrap(rank_ - s - 2, n));
    exchange(ctx, memory, outgoing, bytes, right, incoming, bytes, left);
    memory.reduce(incoming, in + in_block * bytes, count, input.dtype, op);
    std::swap(incoming, outgoing);
  }
  memory.copy(output.data, outgoing, bytes);
}

void UcxCommunicator::all_gather(const Tensor& input, Tensor output) {
  const std::string ctx = context("all_gather");
  require_init(ctx);
  check_tensor(ctx, input, "input");
  check_tensor(ctx, output, "output");
  if (input.dtype != output.dtype)
    throw Error(ctx + "input is " + dtype_name(input.dtype) + " but output is " + dtype_name(output.dtype));
  const int n = size();
  if (output.numel() != n * input.numel())
    throw Error(ctx + "output has " + std::to_string(output.numel()) + " elements, expected " +
                std::to_string(n) + " ranks x input " + std::to_string(input.numel()));
  start_collective(ctx);
  const size_t bytes = input.bytes();
  if (bytes == 0) return;
  BufferMemory& memory = memory_of(ctx, input, output);
  char* out = memory.stage(output.data, output.bytes(), false);
  memory.copy(out + rank_ * bytes, input.data, bytes);
  Blocks b;
  for (int r = 0; r < n; ++r) {
    b.offset.push_back(static_cast<size_t>(r) * bytes);
    b.count.push_back(bytes);
  }
  ring_all_gather(ctx, memory, out, b, 1);
  memory.unstage(output.data, out, output.bytes(), true);
}

void UcxCommunicator::broadcast(Tensor buffer, int root) {
  const std::string ctx = context("broadcast");
  require_init(ctx);
  check_tensor(ctx, buffer, "buffer");
  const int n = size();
  if (root < 0 || root >= n)
    throw Error(ctx + "root " + std::to_string(root) + " outside group of " + std::to_string(n) + " ranks");
  start_collective(ctx);
  const size_t bytes = buffer.bytes();
  if (n == 1 || bytes == 0) return;
  BufferMemory& memory = memory_of(ctx, buffer);
  char* data = memory.stage(buffer.data, bytes, rank_ == root);
  if (bytes < kTreeLimitBytes) {
    tree_broadcast(ctx, memory, data, bytes, root);
    memory.unstage(buffer.data, data, bytes, rank_ != root);
    return;
  }
  // Large: the root scatters one block to each rank, then a ring all-gather, so no link carries
  // much more than the buffer once.
  const Blocks b = blocks_of(bytes);
  if (rank_ == root) {
    std::vector<std::pair<int, std::pair<const char*, size_t>>> blocks;
    for (int r = 0; r < n; ++r)
      if (r != root) blocks.push_back({r, {data + b.offset[static_cast<size_t>(r)], b.count[static_cast<size_t>(r)]}});
    send_to_each(ctx, memory, blocks);
  } else {
    exchange(ctx, memory, nullptr, 0, 0, data + b.offset[static_cast<size_t>(rank_)],
             b.count[static_cast<size_t>(rank_)], root);
  }
  ring_all_gather(ctx, memory, data, b, 1);
  memory.unstage(buffer.data, data, bytes, rank_ != root);
}

}  // namespace ptdp::comm_ucx
