#include "nccl_wait.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "ptdp/checked_call_nccl.hpp"

namespace ptdp::comm_nccl {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string timeout_failure(const std::string& what, double timeout_s) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
  return what + " timed out after " + seconds + " s (a peer may have died)";
}

ncclResult_t async_state(ncclComm_t comm) {
  ncclResult_t state = ncclSuccess;
  PTDP_CALL(ncclCommGetAsyncError(comm, &state));
  return state;
}

std::string wait_until_done(const std::string& what, double timeout_s,
                            const std::function<Progress()>& look) {
  std::chrono::microseconds delay{5};
  for (;;) {
    const Progress progress = look();
    if (progress.done) return {};
    if (progress.state != ncclSuccess && progress.state != ncclInProgress)
      return what + ": " + status_text(progress.state);
    if (progress.since && seconds_since(*progress.since) > timeout_s)
      return timeout_failure(what, timeout_s);
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::microseconds(2000));
  }
}

}  // namespace ptdp::comm_nccl
