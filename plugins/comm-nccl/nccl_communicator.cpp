// NcclCommunicator's operations: argument checks, enqueueing on the stream, waiting for the GPU,
// groups and the barrier. Creation, failure handling and teardown are in nccl_lifecycle.cpp.
#include "nccl_communicator.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <utility>

#include "nccl_types.hpp"
#include "nccl_wait.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/checked_call_nccl.hpp"
#include "ptdp/error.hpp"

namespace ptdp::comm_nccl {
namespace {

size_t count_of(const Tensor& tensor) { return static_cast<size_t>(tensor.numel()); }

std::string describe(const Tensor& tensor) {
  return std::to_string(tensor.numel()) + " x " + dtype_name(tensor.dtype);
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const auto a0 = reinterpret_cast<uintptr_t>(a.data);
  const auto b0 = reinterpret_cast<uintptr_t>(b.data);
  return a.bytes() > 0 && b.bytes() > 0 && a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

const char* byte_offset(const void* base, size_t bytes) {
  return static_cast<const char*>(base) + bytes;
}

// "group [send (8 x f32) to rank 1 + recv (8 x f32) from rank 0]", long groups summarized.
std::string group_description(const std::vector<std::string>& ops) {
  const size_t shown = std::min<size_t>(ops.size(), 4);
  std::string text = "group [";
  for (size_t i = 0; i < shown; ++i) text += (i ? " + " : "") + ops[i];
  if (ops.size() > shown) text += " + " + std::to_string(ops.size() - shown) + " more";
  return text + "]";
}

}  // namespace

cudaStream_t NcclCommunicator::stream() const {
  return bound_stream_ ? bound_stream_ : own_stream_.get();
}

// ---- checks -----------------------------------------------------------------------------

ncclDataType_t NcclCommunicator::checked_type(const std::string& what, const Tensor& tensor,
                                              const char* role) const {
  const std::string who = role;
  if (tensor.device.kind != MemoryKind::Cuda)
    refuse(what, who + " is in host memory; comm-nccl moves CUDA memory only");
  if (tensor.device.index != device_)
    refuse(what, who + " is on cuda:" + std::to_string(tensor.device.index) +
                     " but the communicator is on cuda:" + std::to_string(device_));
  if (tensor.numel() < 0) refuse(what, who + " has a negative dimension in " + shape_string(tensor.shape));
  if (!tensor.data && tensor.numel() > 0) refuse(what, who + " has no data pointer");
  const auto type = nccl_data_type(tensor.dtype);
  if (!type)
    refuse(what, who + " has dtype " + dtype_name(tensor.dtype) +
                     ", which comm-nccl does not move (supported: " + supported_dtype_names() + ")");
  return *type;
}

ncclDataType_t NcclCommunicator::checked_slices(const std::string& what, const Tensor& input,
                                                const Tensor& output, bool input_is_whole) const {
  const ncclDataType_t type = checked_type(what, input, "input");
  checked_type(what, output, "output");
  if (input.dtype != output.dtype)
    refuse(what, std::string("input is ") + dtype_name(input.dtype) + " but output is " +
                     dtype_name(output.dtype));
  const Tensor& whole = input_is_whole ? input : output;
  const Tensor& part = input_is_whole ? output : input;
  const std::string whole_role = input_is_whole ? "input" : "output";
  const std::string part_role = input_is_whole ? "output" : "input";
  if (whole.numel() != part.numel() * size_)
    refuse(what, whole_role + " must hold " + std::to_string(size_) + " x the " + part_role +
                     "'s " + std::to_string(part.numel()) + " elements");
  if (overlaps(input, output) && part.data != byte_offset(whole.data, rank_ * part.bytes()))
    refuse(what, part_role + " overlaps " + whole_role + " without being this rank's slice of it");
  return type;
}

ncclRedOp_t NcclCommunicator::checked_reduction(const std::string& what, ReduceOp op) const {
  const auto reduction = nccl_reduce_op(op);
  if (!reduction) refuse(what, "unknown reduce op " + std::to_string(static_cast<uint32_t>(op)));
  return *reduction;
}

void NcclCommunicator::check_peer(const std::string& what, int peer, const char* role) const {
  if (peer < 0 || peer >= size_)
    refuse(what, std::string(role) + " " + std::to_string(peer) + " is outside the group of " +
                     std::to_string(size_) + " ranks");
}

// ---- enqueueing and waiting -------------------------------------------------------------

template <class Launch>
void NcclCommunicator::enqueue(const std::string& what, bool empty, bool wait, Launch&& launch) {
  guarded(what, [&] {
    std::unique_lock lock(mutex_);
    ensure_usable_locked(what);
    // Nothing to move: every rank sees the same sizes, so all of them skip the call alike.
    if (empty) return;
    if (group_depth_ > 0) {
      launch(comm_, stream());
      group_ops_.push_back(what);
      return;
    }
    const cudaStream_t on = stream();
    cudaEvent_t begin = watchdog_->acquire_event();
    PTDP_CALL(cudaEventRecord(begin, on));
    const ncclResult_t launched = launch(comm_, on);
    lock.unlock();
    finish_enqueued(what, begin, launched, wait);
  });
}

void NcclCommunicator::finish_enqueued(const std::string& what, cudaEvent_t begin,
                                       ncclResult_t launched, bool wait) {
  // A non-blocking communicator may return before its kernels are on the stream; the `end`
  // event has to come after them.
  if (launched == ncclInProgress) settle(what);
  cudaEvent_t end = watchdog_->acquire_event();
  PTDP_CALL(cudaEventRecord(end, stream()));
  if (!wait) {
    watchdog_->track(what, begin, end);
    return;
  }
  wait_for(what, begin, end);
  watchdog_->release_event(begin);
  watchdog_->release_event(end);
}

void NcclCommunicator::wait_for(const std::string& what, cudaEvent_t begin, cudaEvent_t end) {
  const auto waiting_since = Clock::now();
  std::optional<Clock::time_point> started;
  const std::string problem = wait_until_done(what, timeout_s_, [&] {
    std::lock_guard lock(mutex_);
    throw_if_down_locked();
    if (PTDP_CUDA_QUERY(cudaEventQuery(end))) return Progress{true, ncclSuccess, std::nullopt};
    if (!started && PTDP_CUDA_QUERY(cudaEventQuery(begin))) started = Clock::now();
    const ncclResult_t state = async_state(comm_);
    const bool healthy = state == ncclSuccess || state == ncclInProgress;
    if (!started && healthy && seconds_since(waiting_since) > timeout_s_) {
      // The GPU never reached the operation: earlier work on the stream is stuck, which
      // aborting NCCL cannot cure, and the communicator itself is fine.
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s_);
      refuse(what, std::string("did not start within ") + seconds +
                       " s: earlier work on the stream has not finished");
    }
    return Progress{false, state, started};
  });
  if (!problem.empty()) fail(problem);
}

// ---- operations -------------------------------------------------------------------------

void NcclCommunicator::all_reduce(Tensor buffer, ReduceOp op) {
  const std::string what =
      "all_reduce (" + describe(buffer) + ", " + reduce_op_name(op) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  const ncclRedOp_t reduction = checked_reduction(what, op);
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(
        ncclAllReduce(buffer.data, buffer.data, count_of(buffer), type, reduction, comm, on));
  });
}

// In place means: the output is this rank's slice of the input.
void NcclCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  const std::string what = "reduce_scatter (" + describe(input) + " -> " + describe(output) + ", " +
                           reduce_op_name(op) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_slices(what, input, output, true);
  const ncclRedOp_t reduction = checked_reduction(what, op);
  enqueue(what, output.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(ncclReduceScatter(input.data, output.data, count_of(output), type, reduction,
                                       comm, on));
  });
}

// In place means: the input is this rank's slice of the output (the scatter/gather pipeline
// transfer receives straight into that slice, then gathers the rest).
void NcclCommunicator::all_gather(const Tensor& input, Tensor output) {
  const std::string what = "all_gather (" + describe(input) + " -> " + describe(output) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_slices(what, input, output, false);
  enqueue(what, input.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(ncclAllGather(input.data, output.data, count_of(input), type, comm, on));
  });
}

void NcclCommunicator::broadcast(Tensor buffer, int root) {
  const std::string what =
      "broadcast (" + describe(buffer) + " from rank " + std::to_string(root) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  check_peer(what, root, "root");
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(
        ncclBroadcast(buffer.data, buffer.data, count_of(buffer), type, root, comm, on));
  });
}

// NCCL has no tags: messages between two ranks match in the order they were posted. The
// core's lowering posts them in the same order on both sides (its verifier checks that), so
// the tag adds nothing here and is not sent.
void NcclCommunicator::send(const Tensor& buffer, int peer, int /*tag*/) {
  const std::string what = "send (" + describe(buffer) + ") to rank " + std::to_string(peer);
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  check_peer(what, peer, "peer");
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(ncclSend(buffer.data, count_of(buffer), type, peer, comm, on));
  });
}

void NcclCommunicator::recv(Tensor buffer, int peer, int /*tag*/) {
  const std::string what = "recv (" + describe(buffer) + ") from rank " + std::to_string(peer);
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  check_peer(what, peer, "peer");
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return PTDP_CALL(ncclRecv(buffer.data, count_of(buffer), type, peer, comm, on));
  });
}

void NcclCommunicator::group_start() {
  const std::string what = "group_start";
  guarded(what, [&] {
    std::lock_guard lock(mutex_);
    ensure_usable_locked(what);
    if (group_depth_ == 0) {
      // NCCL launches a group's kernels at the outermost group_end, so an event recorded now
      // comes before all of them on the stream.
      cudaEvent_t begin = watchdog_->acquire_event();
      PTDP_CALL(cudaEventRecord(begin, stream()));
      group_begin_ = begin;
      group_thread_ = std::this_thread::get_id();
      group_ops_.clear();
    }
    PTDP_CALL(ncclGroupStart());
    ++group_depth_;
  });
}

void NcclCommunicator::group_end() {
  const std::string what = "group_end";
  guarded(what, [&] {
    std::unique_lock lock(mutex_);
    if (group_depth_ == 0) refuse(what, "no group_start to match");
    if (group_thread_ != std::this_thread::get_id())
      refuse(what, "called on another thread than its group_start");
    --group_depth_;
    if (group_depth_ > 0) {
      PTDP_CALL(ncclGroupEnd());
      return;
    }
    const std::vector<std::string> ops = std::exchange(group_ops_, {});
    const std::string group = group_description(ops);
    cudaEvent_t begin = std::exchange(group_begin_, nullptr);
    if (!failure_.empty()) {
      // Failed while the group was open: close NCCL's group on this thread, then carry out
      // the abort that had to wait for it.
      TeardownFailures failures;
      PTDP_TEARDOWN_CALL(failures, ncclGroupEnd());
      settings_.log.write_failures(prefix() + "closing the failed group", failures);
      const std::string reason = "refused: the communicator is down (" + failure_ + ")";
      ncclComm_t doomed = detach_locked();
      lock.unlock();
      abort_detached(doomed);
      refuse(group, reason);
    }
    ncclResult_t launched = ncclSuccess;
    try {
      launched = PTDP_CALL(ncclGroupEnd());
    } catch (const CallError& e) {
      throw CallError(PTDP_PLUGIN_NAME, group + ": " + e.detail());
    }
    if (ops.empty() && launched == ncclSuccess) {
      watchdog_->release_event(begin);
      return;
    }
    lock.unlock();
    finish_enqueued(group, begin, launched, settings_.synchronous);
  });
}

void NcclCommunicator::barrier() {
  const std::string what = "barrier";
  void* scratch = nullptr;
  guarded(what, [&] {
    std::lock_guard lock(mutex_);
    ensure_usable_locked(what);
    if (group_depth_ > 0) refuse(what, "not allowed between group_start and group_end");
    // Stream-ordered: no device-wide synchronization, which a stuck kernel could block.
    PTDP_CALL(cudaMallocAsync(&scratch, sizeof(int32_t), stream()));
    PTDP_CALL(cudaMemsetAsync(scratch, 0, sizeof(int32_t), stream()));
  });
  const auto release = [&] {
    TeardownFailures failures;
    PTDP_TEARDOWN_CALL(failures, cudaFreeAsync(scratch, stream()));
    settings_.log.write_failures(prefix() + "barrier", failures);
  };
  try {
    enqueue(what, false, true, [&](ncclComm_t comm, cudaStream_t on) {
      return PTDP_CALL(ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm, on));
    });
  } catch (...) {
    release();
    throw;
  }
  release();
}

void NcclCommunicator::bind_stream(void* stream) {
  std::lock_guard lock(mutex_);
  if (group_depth_ > 0) refuse("bind_stream", "not allowed between group_start and group_end");
  bound_stream_ = static_cast<cudaStream_t>(stream);
}

}  // namespace ptdp::comm_nccl
