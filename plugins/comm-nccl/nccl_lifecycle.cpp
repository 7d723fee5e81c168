// NcclCommunicator's lifecycle and failure handling: creation (init, split), the watchdog's
// wiring, NCCL's asynchronous errors, abort, and teardown. The operations are in
// nccl_communicator.cpp.
#include <cstdint>
#include <cstring>
#include <utility>

#include "nccl_communicator.hpp"
#include "nccl_wait.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/checked_call_nccl.hpp"
#include "ptdp/error.hpp"

namespace ptdp::comm_nccl {

CommSettings CommSettings::from(const PluginContext& context) {
  PTDP_CHECK(context.config, "comm-nccl: made without its configuration table");
  return {context.config->get_float("timeout_s"), context.config->get_bool("synchronous"), PluginLog(context)};
}

NcclCommunicator::NcclCommunicator(const PluginContext& context)
    : settings_(CommSettings::from(context)),
      made_by_host_(true),
      world_rank_(context.rank),
      rank_(context.rank),
      size_(context.world_size) {}

NcclCommunicator::NcclCommunicator(const ChildOf& child)
    : settings_(child.parent.settings_),
      made_by_host_(false),
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
  {
    std::lock_guard lock(mutex_);
    // A group made by a split that failed half way (every split job has been joined by now).
    abort_detached(std::exchange(split_result_, nullptr));
    if (comm_ && group_depth_ > 0 && group_thread_ != std::this_thread::get_id()) {
      // NCCL's open group lives in the other thread's state and still points at comm_;
      // freeing it from here would leave that thread a dangling communicator.
      settings_.log.write(LogLevel::Error, prefix() +
                                               "destroyed while another thread has a group open; "
                                               "the NCCL communicator is left allocated");
    } else if (comm_) {
      if (group_depth_ > 0) {
        TeardownFailures failures;
        for (; group_depth_ > 0; --group_depth_) PTDP_TEARDOWN_CALL(failures, ncclGroupEnd());
        settings_.log.write_failures(prefix() + "closing the open group", failures);
        if (failure_.empty()) failure_ = "destroyed inside an open group";
      }
      if (!(initialized_ && failure_.empty() && finalize_locked())) abort_detached(detach_locked());
    }
  }
  // Groups split from this one may outlive it, but not the host's log.
  if (made_by_host_) settings_.log.close();
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
  settings_.log.write(LogLevel::Error, message);
  abort_detached(doomed);
  throw Error(message);
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

void NcclCommunicator::throw_if_down_locked() const {
  if (failure_.empty() && comm_) return;
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
  TeardownFailures failures;
  PTDP_TEARDOWN_CALL(failures, ncclCommAbort(comm));
  settings_.log.write_failures(prefix() + "abort", failures);
}

bool NcclCommunicator::finalize_locked() {
  std::string problem;
  try {
    const auto start = Clock::now();
    // Finalize flushes what is still in flight without blocking (the communicator is
    // non-blocking); its state says when that is done.
    PTDP_CALL(ncclCommFinalize(comm_));
    problem = wait_until_done("finalize", timeout_s_, [&] {
      const ncclResult_t state = async_state(comm_);
      return Progress{state == ncclSuccess, state, start};
    });
  } catch (const CallError& e) {
    problem = "finalize: " + e.detail();
  }
  if (!problem.empty()) {
    settings_.log.write(LogLevel::Warn, prefix() + problem + "; aborting instead");
    return false;
  }
  TeardownFailures failures;
  PTDP_TEARDOWN_CALL(failures, ncclCommDestroy(comm_));
  // After ncclCommDestroy the handle is gone whatever it returned: never abort it too.
  comm_ = nullptr;
  settings_.log.write_failures(prefix() + "destroy", failures);
  return true;
}

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
    PTDP_CALL(cudaSetDevice(init.device.index));
    device_ = init.device.index;
    const ncclUniqueId id = exchange_unique_id(init);

    cudaStream_t created = nullptr;
    PTDP_CALL(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    own_stream_.reset(created, [log = settings_.log](cudaStream_t stream) {
      TeardownFailures failures;
      PTDP_TEARDOWN_CALL(failures, cudaStreamDestroy(stream));
      log.write_failures("comm-nccl: destroying its stream", failures);
    });

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // never block inside NCCL: every wait below has a timeout
    {
      std::lock_guard lock(mutex_);
      PTDP_CALL(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
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
    PTDP_CALL(ncclGetUniqueId(&id));
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
      PTDP_CALL(ncclCommSplit(comm_, color, key, &split_result_, &config));
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
      if (!comm_)
        throw CallError(PTDP_PLUGIN_NAME, "ncclCommSplit finished without making a communicator");
    }
    settle(what);
    {
      std::lock_guard lock(mutex_);
      int rank = 0;
      int size = 0;
      PTDP_CALL(ncclCommUserRank(comm_, &rank));
      PTDP_CALL(ncclCommCount(comm_, &size));
      rank_ = rank;
      size_ = size;
    }
    start_watchdog();
    std::lock_guard lock(mutex_);
    initialized_ = true;
  });
}

void NcclCommunicator::settle(const std::string& what) {
  const auto start = Clock::now();
  const std::string problem = wait_until_done(what, timeout_s_, [&] {
    std::lock_guard lock(mutex_);
    throw_if_down_locked();
    const ncclResult_t state = async_state(comm_);
    return Progress{state == ncclSuccess, state, start};
  });
  if (!problem.empty()) fail(problem);
}

void NcclCommunicator::start_watchdog() {
  auto watchdog = std::make_unique<OperationWatchdog>(
      device_, timeout_s_,
      [this] {
        std::lock_guard lock(mutex_);
        return health_locked();
      },
      [this](const std::string& failure) { on_watchdog_failure(failure); }, settings_.log,
      prefix());
  std::lock_guard lock(mutex_);
  watchdog_ = std::move(watchdog);
}

std::string NcclCommunicator::health_locked() const {
  if (!comm_) return {};
  const ncclResult_t state = async_state(comm_);
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return status_text(state);
}

void NcclCommunicator::on_watchdog_failure(const std::string& failure) {
  ncclComm_t doomed = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.empty()) return;
    failure_ = failure;
    doomed = detach_locked();
  }
  settings_.log.write(LogLevel::Error,
                      prefix() + failure + "; the watchdog aborts the communicator");
  abort_detached(doomed);
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
