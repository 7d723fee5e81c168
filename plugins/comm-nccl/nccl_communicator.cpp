#include "nccl_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "nccl_check.hpp"
#include "nccl_types.hpp"
#include "ptdp/error.hpp"

namespace ptdp::comm_nccl {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sleeps between polls: briefly at first (NCCL's host side is usually done in microseconds),
// growing to 2 ms so that a long wait costs no CPU.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(delay_);
    delay_ = std::min(delay_ * 2, std::chrono::microseconds(2000));
  }

 private:
  std::chrono::microseconds delay_{5};
};

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

CommSettings CommSettings::from(const PluginContext& context) {
  CommSettings settings;
  if (context.config) {
    settings.timeout_s = context.config->get_float("timeout_s");
    settings.synchronous = context.config->get_bool("synchronous");
  }
  settings.log = context.log;
  settings.log_user = context.log_user;
  return settings;
}

void CommSettings::write_log(LogLevel level, const std::string& message) const {
  if (log) log(log_user, level, message.c_str());
}

NcclCommunicator::NcclCommunicator(const PluginContext& context)
    : settings_(CommSettings::from(context)),
      world_rank_(context.rank),
      rank_(context.rank),
      size_(context.world_size) {}

NcclCommunicator::NcclCommunicator(const ChildOf& child)
    : settings_(child.parent.settings_),
      timeout_s_(child.parent.timeout_s_),
      world_rank_(child.parent.world_rank_),
      rank_(0),
      size_(0),  // unknown until NCCL has made the group
      name_(child.name),
      device_(child.parent.device_),
      own_stream_(child.parent.own_stream_),
      bound_stream_(child.parent.bound_stream_) {}

NcclCommunicator::~NcclCommunicator() {
  // First, so that no failure handler runs while the communicator goes away (a handler in
  // progress, ncclCommAbort included, is waited for).
  std::unique_ptr<OperationWatchdog> watchdog;
  {
    std::lock_guard lock(mutex_);
    watchdog = std::move(watchdog_);
  }
  watchdog.reset();
  std::lock_guard lock(mutex_);
  // A group made by a split that failed half way (every split job has been joined by now).
  abort_detached(std::exchange(split_result_, nullptr));
  if (!comm_) return;
  if (group_depth_ > 0) {
    if (group_thread_ != std::this_thread::get_id()) {
      // NCCL's open group lives in the other thread's state and still points at comm_;
      // freeing it from here would leave that thread a dangling communicator.
      settings_.write_log(LogLevel::Error, prefix() +
                                               "destroyed while another thread has a group open; "
                                               "the NCCL communicator is left allocated");
      return;
    }
    for (; group_depth_ > 0; --group_depth_) {
      const std::string problem = NCCL_REPORT(ncclGroupEnd());
      if (!problem.empty()) settings_.write_log(LogLevel::Warn, prefix() + problem);
    }
    if (failure_.empty()) failure_ = "destroyed inside an open group";
  }
  if (initialized_ && failure_.empty() && finalize_locked()) return;
  abort_detached(detach_locked());
}

std::string NcclCommunicator::prefix() const {
  std::string text = "comm-nccl: rank " + std::to_string(world_rank_) + " (group '" + name_ + "'";
  if (size_ > 0) text += ", rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  return text + "): ";
}

void NcclCommunicator::refuse(const std::string& what, const std::string& reason) const {
  throw Error(prefix() + what + ": " + reason);
}

void NcclCommunicator::fail(const std::string& failure) {
  std::string message;
  ncclComm_t doomed = nullptr;
  {
    std::lock_guard lock(mutex_);
    // A failure recorded first (by the watchdog or abort()) is the cause of this one.
    if (failure_.empty()) failure_ = failure;
    message = prefix() + failure_;
    doomed = detach_locked();
  }
  settings_.write_log(LogLevel::Error, message);
  abort_detached(doomed);
  throw Error(message);
}

template <class Body>
void NcclCommunicator::guarded(const std::string& what, Body&& body) {
  try {
    body();
  } catch (const CallFailure& e) {
    fail(what + ": " + e.what());
  }
}

void NcclCommunicator::require_usable(const std::string& what) const {
  std::lock_guard lock(mutex_);
  ensure_usable_locked(what);
}

void NcclCommunicator::ensure_usable_locked(const std::string& what) const {
  if (!failure_.empty())
    refuse(what, "refused: the communicator is down (" + failure_ + ")");
  if (!initialized_) refuse(what, "the communicator is not initialized (call init first)");
  if (group_depth_ > 0 && group_thread_ != std::this_thread::get_id())
    refuse(what, "another thread has a group open on this communicator");
}

void NcclCommunicator::throw_recorded_failure_locked() const {
  throw Error(prefix() + (failure_.empty() ? std::string("the NCCL communicator is gone") : failure_));
}

ncclComm_t NcclCommunicator::detach_locked() {
  // Inside a group NCCL's thread-local group state points at comm_: the group's own thread
  // aborts at group_end (or on destruction), a few calls from now.
  if (!comm_ || group_depth_ > 0) return nullptr;
  if (watchdog_) watchdog_->forget_all();
  return std::exchange(comm_, nullptr);
}

void NcclCommunicator::abort_detached(ncclComm_t comm) const {
  if (!comm) return;
  const std::string problem = NCCL_REPORT(ncclCommAbort(comm));
  if (!problem.empty()) settings_.write_log(LogLevel::Warn, prefix() + "abort: " + problem);
}

bool NcclCommunicator::finalize_locked() {
  const auto start = Clock::now();
  // Finalize flushes what is still in flight without blocking (the communicator is
  // non-blocking); its state says when that is done.
  std::string problem = NCCL_REPORT(ncclCommFinalize(comm_));
  Backoff backoff;
  while (problem.empty()) {
    ncclResult_t state = ncclSuccess;
    problem = NCCL_REPORT(ncclCommGetAsyncError(comm_, &state));
    if (!problem.empty()) break;
    if (state == ncclSuccess) {
      problem = NCCL_REPORT(ncclCommDestroy(comm_));
      // After ncclCommDestroy the handle is gone whatever it returned: never abort it too.
      comm_ = nullptr;
      if (!problem.empty()) settings_.write_log(LogLevel::Warn, prefix() + "destroy: " + problem);
      return true;
    }
    if (state != ncclInProgress) {
      problem = "NCCL error: " + nccl_error_text(state);
      break;
    }
    if (seconds_since(start) > timeout_s_) {
      problem = timeout_failure("finalize", timeout_s_);
      break;
    }
    backoff.pause();
  }
  settings_.write_log(LogLevel::Warn, prefix() + "finalize: " + problem + "; aborting instead");
  return false;
}

cudaStream_t NcclCommunicator::stream() const {
  return bound_stream_ ? bound_stream_ : own_stream_.get();
}

// ---- creation ---------------------------------------------------------------------------

void NcclCommunicator::init(const CommInit& init) {
  const std::string what = "init (world of " + std::to_string(init.size) + ")";
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) refuse(what, "refused: the communicator is down (" + failure_ + ")");
    if (initialized_ || comm_) refuse(what, "called twice");
  }
  if (init.size < 1 || init.rank < 0 || init.rank >= init.size)
    refuse(what, "rank " + std::to_string(init.rank) + " is outside a world of " +
                     std::to_string(init.size) + " ranks");
  if (!init.store) refuse(what, "no rendezvous store was given");
  if (init.device.kind != MemoryKind::Cuda)
    refuse(what, "CommInit::device is not a CUDA device: comm-nccl moves CUDA memory only");
  world_rank_ = rank_ = init.rank;
  size_ = init.size;
  timeout_s_ = settings_.timeout_s > 0 ? settings_.timeout_s : init.timeout_s;
  if (!(timeout_s_ > 0))
    refuse(what, "the timeout must be positive (CommInit::timeout_s is " +
                     std::to_string(init.timeout_s) + " and the plugin's timeout_s is unset)");

  guarded(what, [&] {
    // The core's device for this rank (communicator.hpp): NCCL binds a communicator to the
    // device current when it is created.
    CUDA_CHECK(cudaSetDevice(init.device.index));
    device_ = init.device.index;
    const ncclUniqueId id = exchange_unique_id(init);

    cudaStream_t created = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    own_stream_.reset(created, [settings = settings_](cudaStream_t stream) {
      const std::string problem = CUDA_REPORT(cudaStreamDestroy(stream));
      if (!problem.empty()) settings.write_log(LogLevel::Warn, "comm-nccl: " + problem);
    });

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // never block inside NCCL: every wait below has a timeout
    {
      std::lock_guard lock(mutex_);
      NCCL_CHECK(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
    }
    settle(what);
    start_watchdog();
    std::lock_guard lock(mutex_);
    initialized_ = true;
  });
}

ncclUniqueId NcclCommunicator::exchange_unique_id(const CommInit& init) const {
  const std::string what = "init";
  const std::string key = init.key_prefix + "/nccl-unique-id";
  ncclUniqueId id{};
  if (init.rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const auto* first = reinterpret_cast<const uint8_t*>(&id);
    try {
      init.store->set(key, std::vector<uint8_t>(first, first + sizeof id));
    } catch (const std::exception& e) {
      refuse(what, "cannot publish the NCCL unique id: " + std::string(e.what()));
    }
    return id;
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = init.store->get(key, std::chrono::milliseconds(static_cast<int64_t>(timeout_s_ * 1000)));
  } catch (const std::exception& e) {
    refuse(what, "no NCCL unique id from rank 0: " + std::string(e.what()));
  }
  if (bytes.size() != sizeof id)
    refuse(what, "the rendezvous value '" + key + "' has " + std::to_string(bytes.size()) +
                     " bytes, not the " + std::to_string(sizeof id) + " of an NCCL unique id");
  std::memcpy(&id, bytes.data(), sizeof id);
  return id;
}

std::shared_ptr<Communicator> NcclCommunicator::split(int color, int key, const std::string& name) {
  const std::string what = "split into '" + name + "' (color " + std::to_string(color) + ", key " +
                           std::to_string(key) + ")";
  require_usable(what);
  if (color < 0) refuse(what, "the color must be >= 0");
  std::shared_ptr<NcclCommunicator> child(new NcclCommunicator(ChildOf{*this, name}));
  guarded(what, [&] {
    {
      std::lock_guard lock(mutex_);
      ensure_usable_locked(what);
      if (group_depth_ > 0) refuse(what, "not allowed between group_start and group_end");
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      // Own resources, so that aborting one group leaves its siblings and parent working.
      config.splitShare = 0;
      split_result_ = nullptr;
      NCCL_CHECK(ncclCommSplit(comm_, color, key, &split_result_, &config));
    }
    // The split runs as a job of the parent: the parent's state says when it is over.
    settle(what);
    std::lock_guard lock(mutex_);
    child->comm_ = __atomic_exchange_n(&split_result_, nullptr, __ATOMIC_ACQ_REL);
  });
  child->complete_split(what);
  return child;
}

void NcclCommunicator::complete_split(const std::string& what) {
  guarded(what, [&] {
    {
      std::lock_guard lock(mutex_);
      if (!comm_) throw CallFailure("ncclCommSplit finished without making a communicator");
    }
    settle(what);
    {
      std::lock_guard lock(mutex_);
      int rank = 0;
      int size = 0;
      NCCL_CHECK(ncclCommUserRank(comm_, &rank));
      NCCL_CHECK(ncclCommCount(comm_, &size));
      rank_ = rank;
      size_ = size;
    }
    start_watchdog();
    std::lock_guard lock(mutex_);
    initialized_ = true;
  });
}

void NcclCommunicator::start_watchdog() {
  auto watchdog = std::make_unique<OperationWatchdog>(
      device_, timeout_s_,
      [this] {
        std::lock_guard lock(mutex_);
        return health_locked();
      },
      [this](const std::string& failure) { on_watchdog_failure(failure); });
  std::lock_guard lock(mutex_);
  watchdog_ = std::move(watchdog);
}

std::string NcclCommunicator::health_locked() const {
  if (!comm_) return {};
  ncclResult_t state = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return "NCCL error: " + nccl_error_text(state);
}

void NcclCommunicator::on_watchdog_failure(const std::string& failure) {
  ncclComm_t doomed = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;
    failure_ = failure;
    doomed = detach_locked();
  }
  settings_.write_log(LogLevel::Error, prefix() + failure + "; the watchdog aborts the communicator");
  abort_detached(doomed);
}

void NcclCommunicator::bind_stream(void* stream) {
  std::lock_guard lock(mutex_);
  if (group_depth_ > 0) refuse("bind_stream", "not allowed between group_start and group_end");
  bound_stream_ = static_cast<cudaStream_t>(stream);
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
    CUDA_CHECK(cudaEventRecord(begin, on));
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
  CUDA_CHECK(cudaEventRecord(end, stream()));
  if (!wait) {
    watchdog_->track(what, begin, end);
    return;
  }
  wait_for(what, begin, end);
  watchdog_->release_event(begin);
  watchdog_->release_event(end);
}

void NcclCommunicator::settle(const std::string& what) {
  const auto start = Clock::now();
  Backoff backoff;
  for (;;) {
    std::string problem;
    {
      std::lock_guard lock(mutex_);
      if (!failure_.empty() || !comm_) throw_recorded_failure_locked();
      ncclResult_t state = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) problem = what + ": NCCL error: " + nccl_error_text(state);
    }
    if (problem.empty() && seconds_since(start) > timeout_s_) problem = timeout_failure(what, timeout_s_);
    if (!problem.empty()) fail(problem);
    backoff.pause();
  }
}

void NcclCommunicator::wait_for(const std::string& what, cudaEvent_t begin, cudaEvent_t end) {
  const auto waiting_since = Clock::now();
  std::optional<Clock::time_point> started;
  Backoff backoff;
  for (;;) {
    std::string problem;
    {
      std::lock_guard lock(mutex_);
      if (!failure_.empty() || !comm_) throw_recorded_failure_locked();
      if (CUDA_QUERY(cudaEventQuery(end))) return;
      if (!started && CUDA_QUERY(cudaEventQuery(begin))) started = Clock::now();
      ncclResult_t state = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
      if (state != ncclSuccess && state != ncclInProgress)
        problem = what + ": NCCL error: " + nccl_error_text(state);
    }
    if (problem.empty() && started && seconds_since(*started) > timeout_s_)
      problem = timeout_failure(what, timeout_s_);
    if (!problem.empty()) fail(problem);
    if (!started && seconds_since(waiting_since) > timeout_s_) {
      // The GPU never reached the operation: earlier work on the stream is stuck, which
      // aborting NCCL cannot cure, and the communicator itself is fine.
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s_);
      refuse(what, std::string("did not start within ") + seconds +
                       " s: earlier work on the stream has not finished");
    }
    backoff.pause();
  }
}

// ---- operations -------------------------------------------------------------------------

void NcclCommunicator::all_reduce(Tensor buffer, ReduceOp op) {
  const std::string what =
      "all_reduce (" + describe(buffer) + ", " + reduce_op_name(op) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  const auto reduction = nccl_reduce_op(op);
  if (!reduction) refuse(what, "unknown reduce op " + std::to_string(static_cast<uint32_t>(op)));
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return NCCL_CHECK(
        ncclAllReduce(buffer.data, buffer.data, count_of(buffer), type, *reduction, comm, on));
  });
}

void NcclCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  const std::string what = "reduce_scatter (" + describe(input) + " -> " + describe(output) + ", " +
                           reduce_op_name(op) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, input, "input");
  checked_type(what, output, "output");
  if (input.dtype != output.dtype)
    refuse(what, std::string("input is ") + dtype_name(input.dtype) + " but output is " +
                     dtype_name(output.dtype));
  if (input.numel() != output.numel() * size_)
    refuse(what, "input must hold " + std::to_string(size_) + " x the output's " +
                     std::to_string(output.numel()) + " elements");
  // In place means: the output is this rank's slice of the input.
  if (overlaps(input, output) && output.data != byte_offset(input.data, rank_ * output.bytes()))
    refuse(what, "output overlaps input without being this rank's slice of it");
  const auto reduction = nccl_reduce_op(op);
  if (!reduction) refuse(what, "unknown reduce op " + std::to_string(static_cast<uint32_t>(op)));
  enqueue(what, output.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return NCCL_CHECK(ncclReduceScatter(input.data, output.data, count_of(output), type,
                                        *reduction, comm, on));
  });
}

void NcclCommunicator::all_gather(const Tensor& input, Tensor output) {
  const std::string what = "all_gather (" + describe(input) + " -> " + describe(output) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, input, "input");
  checked_type(what, output, "output");
  if (input.dtype != output.dtype)
    refuse(what, std::string("input is ") + dtype_name(input.dtype) + " but output is " +
                     dtype_name(output.dtype));
  if (output.numel() != input.numel() * size_)
    refuse(what, "output must hold " + std::to_string(size_) + " x the input's " +
                     std::to_string(input.numel()) + " elements");
  // In place means: the input is this rank's slice of the output (the scatter/gather
  // pipeline transfer receives straight into that slice, then gathers the rest).
  if (overlaps(input, output) && input.data != byte_offset(output.data, rank_ * input.bytes()))
    refuse(what, "input overlaps output without being this rank's slice of it");
  enqueue(what, input.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return NCCL_CHECK(ncclAllGather(input.data, output.data, count_of(input), type, comm, on));
  });
}

void NcclCommunicator::broadcast(Tensor buffer, int root) {
  const std::string what =
      "broadcast (" + describe(buffer) + " from rank " + std::to_string(root) + ")";
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  check_peer(what, root, "root");
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return NCCL_CHECK(
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
    return NCCL_CHECK(ncclSend(buffer.data, count_of(buffer), type, peer, comm, on));
  });
}

void NcclCommunicator::recv(Tensor buffer, int peer, int /*tag*/) {
  const std::string what = "recv (" + describe(buffer) + ") from rank " + std::to_string(peer);
  require_usable(what);
  const ncclDataType_t type = checked_type(what, buffer, "buffer");
  check_peer(what, peer, "peer");
  enqueue(what, buffer.numel() == 0, settings_.synchronous, [&](ncclComm_t comm, cudaStream_t on) {
    return NCCL_CHECK(ncclRecv(buffer.data, count_of(buffer), type, peer, comm, on));
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
      CUDA_CHECK(cudaEventRecord(begin, stream()));
      group_begin_ = begin;
      group_thread_ = std::this_thread::get_id();
      group_ops_.clear();
    }
    NCCL_CHECK(ncclGroupStart());
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
      NCCL_CHECK(ncclGroupEnd());
      return;
    }
    const std::vector<std::string> ops = std::exchange(group_ops_, {});
    const std::string group = group_description(ops);
    cudaEvent_t begin = std::exchange(group_begin_, nullptr);
    if (!failure_.empty()) {
      // Failed while the group was open: close NCCL's group on this thread, then carry out
      // the abort that had to wait for it.
      const std::string problem = NCCL_REPORT(ncclGroupEnd());
      if (!problem.empty()) settings_.write_log(LogLevel::Warn, prefix() + problem);
      const std::string reason = "refused: the communicator is down (" + failure_ + ")";
      ncclComm_t doomed = detach_locked();
      lock.unlock();
      abort_detached(doomed);
      refuse(group, reason);
    }
    ncclResult_t launched = ncclSuccess;
    try {
      launched = NCCL_CHECK(ncclGroupEnd());
    } catch (const CallFailure& e) {
      throw CallFailure(group + ": " + e.what());
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
    CUDA_CHECK(cudaMallocAsync(&scratch, sizeof(int32_t), stream()));
    CUDA_CHECK(cudaMemsetAsync(scratch, 0, sizeof(int32_t), stream()));
  });
  const auto release = [&] {
    const std::string problem = CUDA_REPORT(cudaFreeAsync(scratch, stream()));
    if (!problem.empty()) settings_.write_log(LogLevel::Warn, prefix() + "barrier: " + problem);
  };
  try {
    enqueue(what, false, true, [&](ncclComm_t comm, cudaStream_t on) {
      return NCCL_CHECK(ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm, on));
    });
  } catch (...) {
    release();
    throw;
  }
  release();
}

void NcclCommunicator::abort(const std::string& reason) {
  ncclComm_t doomed = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = "aborted: " + reason;
    doomed = detach_locked();
  }
  abort_detached(doomed);
}

}  // namespace ptdp::comm_nccl
