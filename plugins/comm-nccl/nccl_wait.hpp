#pragma once
// The one waiting loop of comm-nccl. init and split wait for NCCL's host side, a caller that
// waits for its operation waits for the GPU, and teardown waits for ncclCommFinalize: each looks
// again and again until the work is done, and gives up when NCCL reports an asynchronous error
// or the timeout passes.
#include <nccl.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace ptdp::comm_nccl {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start);

// "<what> timed out after 30 s (a peer may have died)": the one wording for every timeout.
std::string timeout_failure(const std::string& what, double timeout_s);

// What one look at work in progress found.
struct Progress {
  bool done = false;
  ncclResult_t state = ncclSuccess;        // NCCL's asynchronous state of the communicator
  std::optional<Clock::time_point> since;  // the timeout counts from here; unset: not yet
};

// NCCL's asynchronous state of `comm`: ncclSuccess when idle, ncclInProgress while a
// non-blocking call is still working, else the error that broke it. Throws ptdp::CallError when
// NCCL cannot say.
ncclResult_t async_state(ncclComm_t comm);

// Calls `look` until it finds the work done, sleeping in between (briefly at first, since NCCL's
// host side is usually done in microseconds, growing to 2 ms so that a long wait costs no CPU).
// Returns "" when done, else why it never will be: "<what>: NCCL error: ..." or
// timeout_failure(what). `look` may also end the wait by throwing.
std::string wait_until_done(const std::string& what, double timeout_s,
                            const std::function<Progress()>& look);

}  // namespace ptdp::comm_nccl
