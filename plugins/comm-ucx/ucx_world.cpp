#include "ucx_world.hpp"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <ucs/config/global_opts.h>

#include "ptdp/checked_call_ucx.hpp"
#include "tag_layout.hpp"

namespace ptdp::comm_ucx {

namespace {

using Clock = std::chrono::steady_clock;

// Longest sleep on the worker's descriptor before looking again: keeps keepalive checks and
// timeouts running even where a transport raises no event.
constexpr int kPollSliceMs = 200;
// How long a failing rank spends telling the others, and cancelling its own transfers.
constexpr auto kNoticeDeadline = std::chrono::milliseconds(1000);
constexpr auto kCancelDeadline = std::chrono::milliseconds(200);
// How long a rank that sees a peer fail listens for a notice explaining it.
constexpr auto kNoticeGrace = std::chrono::milliseconds(200);
// Yields while the worker stays busy before napping a millisecond at a time.
constexpr int kBusyYields = 64;

std::string seconds(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

bool env_set(const char* name) { return std::getenv(name) != nullptr; }

// Whether a UCX_TLS list lets UCX pick a shared-memory transport (UCX warns about settings for
// transports that are not in use).
bool may_use_shared_memory(const std::string& tls) {
  if (tls.empty() || tls[0] == '^') return true;
  std::stringstream list(tls);
  for (std::string name; std::getline(list, name, ',');)
    if (name == "all" || name == "sm" || name == "shm" || name == "mm" || name == "posix" || name == "sysv")
      return true;
  return false;
}

}  // namespace

UcxWorld::UcxWorld(const UcxOptions& options, const CommInit& init, PluginLog log) : log_(std::move(log)) {
  const std::string who = "comm-ucx: rank " + std::to_string(init.rank) + " (group 'world'): init: ";
  if (init.size < 1 || init.size > kMaxWorldSize)
    throw Error(who + "world size " + std::to_string(init.size) + " outside 1.." + std::to_string(kMaxWorldSize));
  if (init.rank < 0 || init.rank >= init.size)
    throw Error(who + "rank outside world size " + std::to_string(init.size));
  if (!init.store) throw Error(who + "no rendezvous store");
  rank_ = init.rank;
  size_ = init.size;
  timeout_s_ = options.timeout_s > 0 ? options.timeout_s : init.timeout_s;
  if (!(timeout_s_ > 0)) throw Error(who + "timeout " + seconds(timeout_s_) + " must be positive");

  abort_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (abort_fd_ < 0) throw Error(who + "eventfd(): " + std::strerror(errno));
  try {
    create_context(options);
    connect(init);
    post_notice_receive();
  } catch (const std::exception& e) {
    const std::string message = reason_of(e);
    release();
    throw Error(who + message);
  }
}

void UcxWorld::create_context(const UcxOptions& options) {
  // UCX warns when a worker closes with messages nobody received: failure notices and cancelled
  // transfers, expected after a failure and noise in a user's log. UCX_LOG_LEVEL still wins.
  if (!env_set("UCX_LOG_LEVEL")) ucs_global_opts.log_component.log_level = UCS_LOG_LEVEL_ERROR;
  // UCX's memory-type cache learns where memory lives from its allocation hooks, which do not
  // see a CUDA runtime linked statically (kernels-fused's): it took device buffers for host
  // memory and copied them with memcpy (a segfault, seen on the H200). Every transfer names
  // its memory type, so the cache has nothing to add.
  if (!env_set("UCX_MEMTYPE_CACHE")) ucs_global_opts.enable_memtype_cache = UCS_NO;
  ucp_config_t* config = nullptr;
  PTDP_CALL(ucp_config_read(nullptr, nullptr, &config));
  struct ConfigRelease {
    ucp_config_t* c;
    ~ConfigRelease() { ucp_config_release(c); }
  } release{config};
  if (options.one_host && !env_set("UCX_NET_DEVICES")) PTDP_CALL(ucp_config_modify(config, "NET_DEVICES", "lo"));
  if (!options.transports.empty() && ucp_config_modify(config, "TLS", options.transports.c_str()) != UCS_OK)
    throw Error("transports '" + options.transports + "' is not a valid UCX transport list");
  // Shared memory is left out of endpoints with peer failure handling unless its (keepalive
  // based) failure detection is switched on; without it ranks on one node would talk over TCP.
  const char* env_tls = std::getenv("UCX_TLS");
  const std::string tls = !options.transports.empty() ? options.transports : env_tls ? env_tls : "";
  if (may_use_shared_memory(tls) && !env_set("UCX_MM_ERROR_HANDLING") && !env_set("UCX_POSIX_ERROR_HANDLING") &&
      !env_set("UCX_SYSV_ERROR_HANDLING"))
    PTDP_CALL(ucp_config_modify(config, "MM_ERROR_HANDLING", "y"));
  // A dead peer on shared memory is noticed by keepalive; make that well inside the timeout.
  if (!env_set("UCX_KEEPALIVE_INTERVAL")) {
    const double interval = std::clamp(timeout_s_ / 4, 0.5, 20.0);
    PTDP_CALL(ucp_config_modify(config, "KEEPALIVE_INTERVAL", (std::to_string(interval) + "s").c_str()));
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.estimated_num_eps = static_cast<size_t>(size_);
  const std::string with_transports =
      options.transports.empty() ? std::string() : " with transports '" + options.transports + "'";
  PTDP_CALL_AS(ucp_init(&params, config, &context_), "ucp_init" + with_transports);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;  // abort() only touches abort_fd_
  PTDP_CALL(ucp_worker_create(context_, &worker_params, &worker_));
  PTDP_CALL(ucp_worker_get_efd(worker_, &worker_fd_));
}

void UcxWorld::connect(const CommInit& init) {
  ucp_address_t* address = nullptr;
  size_t address_size = 0;
  PTDP_CALL(ucp_worker_get_address(worker_, &address, &address_size));
  // The value carries the world size so that ranks started with different sizes say so.
  std::vector<uint8_t> value(sizeof(int32_t) + address_size);
  const int32_t size = size_;
  std::memcpy(value.data(), &size, sizeof(size));
  std::memcpy(value.data() + sizeof(size), address, address_size);
  ucp_worker_release_address(worker_, address);
  const std::string prefix = (init.key_prefix.empty() ? std::string("comm-ucx") : init.key_prefix) + "/ucx-address/";
  init.store->set(prefix + std::to_string(rank_), value);
  // The host name travels beside the address, so that a failure can say which machine a lost
  // peer was on (an administrator looks for the node, not the rank).
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  const std::string host_prefix = prefix.substr(0, prefix.size() - std::string("ucx-address/").size()) + "ucx-host/";
  init.store->set(host_prefix + std::to_string(rank_), std::vector<uint8_t>(host, host + std::strlen(host)));

  peers_ = std::vector<Peer>(static_cast<size_t>(size_));
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(timeout_s_ * 1000)));
  for (int r = 0; r < size_; ++r) {
    std::vector<uint8_t> remote = init.store->get(prefix + std::to_string(r), timeout);
    int32_t remote_size = -1;
    if (remote.size() > sizeof(remote_size)) std::memcpy(&remote_size, remote.data(), sizeof(remote_size));
    if (remote_size != size_)
      throw Error("rank " + std::to_string(r) + " published a world of " + std::to_string(remote_size) +
                  " ranks, this rank has " + std::to_string(size_) + " (same key prefix reused?)");
    Peer& peer = peers_[static_cast<size_t>(r)];
    peer.world = this;
    peer.rank = r;
    const std::vector<uint8_t> host_name = init.store->get(host_prefix + std::to_string(r), timeout);
    peer.host.assign(host_name.begin(), host_name.end());
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                           UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.address = reinterpret_cast<const ucp_address_t*>(remote.data() + sizeof(remote_size));
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = &UcxWorld::on_endpoint_error;
    ep_params.err_handler.arg = &peer;
    PTDP_CALL_AS(ucp_ep_create(worker_, &ep_params, &peer.ep), "ucp_ep_create to rank " + std::to_string(r));
  }
}

UcxWorld::~UcxWorld() { release(); }

BufferMemory& UcxWorld::cuda_memory(int device, void* stream) {
  for (StreamMemory& m : cuda_memories_)
    if (m.stream == stream) return *m.memory;
  cuda_memories_.push_back(StreamMemory{stream, make_cuda_memory(device, stream, log_)});
  return *cuda_memories_.back().memory;
}

void UcxWorld::release() {
  if (worker_) {
    if (notice_request_) {
      ucp_request_cancel(worker_, notice_request_);
      ucp_request_free(notice_request_);
      notice_request_ = nullptr;
    }
    // Flush what healthy peers still have to receive; cut the rest. How a close ends is not
    // reported: a peer that went first makes the flush fail, which is no failure of this rank.
    const bool broken = !failure_.empty() || aborted_;
    std::vector<void*> closing;
    for (Peer& p : peers_) {
      if (!p.ep) continue;
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = (broken || p.failure != UCS_OK) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      void* request = ucp_ep_close_nbx(p.ep, &param);
      p.ep = nullptr;
      if (UCS_PTR_IS_PTR(request)) closing.push_back(request);
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                             1000 * std::min(timeout_s_, 5.0)));
    while (!closing.empty() && Clock::now() < deadline) {
      ucp_worker_progress(worker_);
      closing.erase(std::remove_if(closing.begin(), closing.end(),
                                   [](void* r) {
                                     if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
                                     ucp_request_free(r);
                                     return true;
                                   }),
                    closing.end());
      if (!closing.empty()) sleep_on_worker(10);
    }
    for (void* r : closing) ucp_request_free(r);
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
  }
  if (context_) ucp_cleanup(context_);
  context_ = nullptr;
  if (abort_fd_ >= 0) ::close(abort_fd_);
  abort_fd_ = -1;
}

void UcxWorld::on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  static_cast<Peer*>(arg)->failure = status;
}

PostedMessage UcxWorld::post_send(const void* data, size_t bytes, ucs_memory_type_t memory, int peer, int world_peer,
                             uint64_t tag) {
  PostedMessage t;
  t.peer = peer;
  t.world_peer = world_peer;
  t.bytes = bytes;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  param.memory_type = memory;
  ucs_status_ptr_t r = ucp_tag_send_nbx(peers_[static_cast<size_t>(world_peer)].ep, data, bytes, tag, &param);
  if (UCS_PTR_IS_ERR(r)) t.status = UCS_PTR_STATUS(r);
  else if (r == nullptr) t.status = UCS_OK;
  else t.request = r;
  return t;
}

PostedMessage UcxWorld::post_recv(void* data, size_t bytes, ucs_memory_type_t memory, int peer, int world_peer,
                             uint64_t tag) {
  PostedMessage t;
  t.peer = peer;
  t.world_peer = world_peer;
  t.receive = true;
  t.bytes = bytes;
  ucp_request_param_t param{};
  // Always a request, even when the message is already here: ucp_tag_recv_request_test then
  // tells its length.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.memory_type = memory;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, data, bytes, tag, kFullMask, &param);
  if (UCS_PTR_IS_ERR(r)) t.status = UCS_PTR_STATUS(r);
  else t.request = r;
  return t;
}

void UcxWorld::update(PostedMessage& t) {
  if (t.status != UCS_INPROGRESS || !t.request) return;
  if (t.receive) {
    ucp_tag_recv_info_t info{};
    t.status = ucp_tag_recv_request_test(t.request, &info);
    if (t.status == UCS_OK) t.received = info.length;
  } else {
    t.status = ucp_request_check_status(t.request);
  }
}

std::string UcxWorld::host_of(int world_rank) const {
  if (world_rank < 0 || world_rank >= static_cast<int>(peers_.size())) return "?";
  return peers_[static_cast<size_t>(world_rank)].host;
}

std::string UcxWorld::peer_name(const PostedMessage& t) const {
  std::string name = "peer " + std::to_string(t.peer) + " (";
  if (t.peer != t.world_peer) name += "world rank " + std::to_string(t.world_peer) + ", ";
  return name + "host " + peers_[static_cast<size_t>(t.world_peer)].host + ")";
}

std::optional<std::string> UcxWorld::broken_transfer(const PostedMessage& t) const {
  if (t.status == UCS_INPROGRESS) {
    const ucs_status_t failure = peers_[static_cast<size_t>(t.world_peer)].failure;
    if (failure != UCS_OK) return peer_name(t) + " unreachable: " + status_text(failure);
    return std::nullopt;
  }
  if (t.status == UCS_ERR_MESSAGE_TRUNCATED)
    return "message from " + peer_name(t) + " is larger than the " + std::to_string(t.bytes) +
           "-byte buffer (do the ranks pass the same sizes?)";
  if (t.status != UCS_OK) return peer_name(t) + " unreachable: " + status_text(t.status);
  if (t.receive && t.received != t.bytes)
    return "received " + std::to_string(t.received) + " bytes from " + peer_name(t) + ", expected " +
           std::to_string(t.bytes) + " (do the ranks pass the same sizes?)";
  return std::nullopt;
}

void UcxWorld::wait(std::vector<PostedMessage>& transfers, const std::string& context) {
  auto last_progress = Clock::now();
  const auto timeout = std::chrono::duration<double>(timeout_s_);
  for (;;) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    bool all_done = true, progressed = false;
    std::optional<std::string> broken;
    for (PostedMessage& t : transfers) {
      const bool was_pending = t.status == UCS_INPROGRESS;
      update(t);
      progressed |= was_pending && t.status != UCS_INPROGRESS;
      all_done &= t.status != UCS_INPROGRESS;
      if (!broken) broken = broken_transfer(t);
    }
    if (all_done && !broken) {
      discard(transfers);
      return;
    }
    // Another rank's notice names the first failure; it wins over what we see of its effects.
    check_interruptions(transfers, context);
    if (broken) {
      await_notice(kNoticeGrace);
      check_interruptions(transfers, context);
      fail(transfers, context + *broken, true);
    }
    const auto now = Clock::now();
    if (progressed) last_progress = now;
    if (now - last_progress >= timeout) {
      const PostedMessage* waiting = first_pending(transfers);
      fail(transfers, context + "timed out after " + seconds(timeout_s_) + " waiting for " + peer_name(*waiting),
           true);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timeout - (now - last_progress));
    sleep_on_worker(static_cast<int>(std::clamp<int64_t>(left.count() + 1, 1, kPollSliceMs)));
  }
}

const PostedMessage* UcxWorld::first_pending(const std::vector<PostedMessage>& transfers) {
  const PostedMessage* waiting = nullptr;  // a receive names the rank we depend on best
  for (const PostedMessage& t : transfers)
    if (t.status == UCS_INPROGRESS && (!waiting || (t.receive && !waiting->receive))) waiting = &t;
  return waiting;
}

void UcxWorld::await_notice(std::chrono::milliseconds grace) {
  const auto deadline = Clock::now() + grace;
  while (notice_request_ && ucp_request_check_status(notice_request_) == UCS_INPROGRESS &&
         Clock::now() < deadline) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    if (ucp_request_check_status(notice_request_) == UCS_INPROGRESS) sleep_on_worker(10);
  }
}

void UcxWorld::sleep_on_worker(int ms) {
  pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {abort_fd_, POLLIN, 0}};
  const ucs_status_t armed = ucp_worker_arm(worker_);
  if (armed == UCS_ERR_BUSY) {
    // UCX sees work it cannot finish yet, typically a shared-memory message whose sender was
    // preempted half-way: give the CPU to the other processes instead of spinning, and nap
    // if it persists.
    if (++busy_streak_ < kBusyYields) ::sched_yield();
    else ::poll(fds + 1, 1, 1);
    return;
  }
  busy_streak_ = 0;
  ::poll(fds, 2, armed == UCS_OK ? ms : std::min(ms, 1));
}

void UcxWorld::check_interruptions(std::vector<PostedMessage>& transfers, const std::string& context) {
  if (aborted_) {
    std::string reason;
    {
      std::lock_guard lock(abort_mutex_);
      reason = abort_reason_;
    }
    fail(transfers, context + "aborted: " + reason, true);
  }
  if (notice_request_) {
    ucp_tag_recv_info_t info{};
    const ucs_status_t status = ucp_tag_recv_request_test(notice_request_, &info);
    if (status != UCS_INPROGRESS) {
      ucp_request_free(notice_request_);
      notice_request_ = nullptr;
      const std::string text = status == UCS_OK ? std::string(notice_buffer_.data(), info.length)
                                                : std::string("(its message was lost)");
      const PostedMessage* waiting = first_pending(transfers);
      fail(transfers,
           context + (waiting ? "stopped waiting for " + peer_name(*waiting) + " because " : std::string()) +
               "world rank " + std::to_string(tag_sender(info.sender_tag)) + " (host " +
               host_of(static_cast<int>(tag_sender(info.sender_tag))) + ") failed: " + text,
           false);
    }
  }
}

void UcxWorld::check_usable(const std::string& context) {
  if (!failure_.empty()) throw Error(context + "communicator unusable after an earlier failure: " + failure_);
  ucp_worker_progress(worker_);
  std::vector<PostedMessage> none;
  check_interruptions(none, context);
}

void UcxWorld::discard(std::vector<PostedMessage>& transfers) {
  bool pending = false;
  for (PostedMessage& t : transfers) {
    update(t);
    if (t.status == UCS_INPROGRESS && t.request) {
      ucp_request_cancel(worker_, t.request);
      pending = true;
    }
  }
  // Cancelled receives may still be copying into buffers the caller is about to free.
  const auto deadline = Clock::now() + kCancelDeadline;
  while (pending && Clock::now() < deadline) {
    ucp_worker_progress(worker_);
    pending = false;
    for (PostedMessage& t : transfers) {
      update(t);
      pending |= t.status == UCS_INPROGRESS && t.request;
    }
  }
  for (PostedMessage& t : transfers)
    if (t.request) ucp_request_free(t.request);
  transfers.clear();
}

void UcxWorld::fail(std::vector<PostedMessage>& transfers, const std::string& message, bool tell_others) {
  if (failure_.empty()) failure_ = message;
  discard(transfers);
  if (tell_others && !notified_) notify_others(message);
  notified_ = true;
  throw Error(message);
}

void UcxWorld::notify_others(const std::string& message) {
  notice_payload_ = message.substr(0, notice_buffer_.size());
  std::vector<void*> sending;
  for (Peer& p : peers_) {
    if (p.rank == rank_ || p.failure != UCS_OK) continue;
    ucp_request_param_t param{};
    ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, notice_payload_.data(), notice_payload_.size(),
                                          make_tag(kNoticeComm, rank_, false, 0), &param);
    if (UCS_PTR_IS_PTR(r)) sending.push_back(r);
  }
  const auto deadline = Clock::now() + kNoticeDeadline;
  while (!sending.empty() && Clock::now() < deadline) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    sending.erase(std::remove_if(sending.begin(), sending.end(),
                                 [](void* r) {
                                   if (ucp_request_check_status(r) == UCS_INPROGRESS) return false;
                                   ucp_request_free(r);
                                   return true;
                                 }),
                  sending.end());
    if (!sending.empty()) sleep_on_worker(10);
  }
  for (void* r : sending) ucp_request_free(r);
}

void UcxWorld::post_notice_receive() {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // always a request to test later
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, notice_buffer_.data(), notice_buffer_.size(),
                                        make_tag(kNoticeComm, 0, false, 0), kAnySenderMask, &param);
  PTDP_CALL_AS(ucs_status_of(r), "ucp_tag_recv_nbx of the failure-notice receive");
  notice_request_ = r;
}

void UcxWorld::abort(const std::string& reason) {
  {
    std::lock_guard lock(abort_mutex_);
    if (abort_reason_.empty()) abort_reason_ = reason;
  }
  aborted_ = true;
  const uint64_t one = 1;
  ssize_t ignored = ::write(abort_fd_, &one, sizeof(one));
  (void)ignored;
}

}  // namespace ptdp::comm_ucx
