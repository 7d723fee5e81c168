#pragma once
// The CUDA runtime's statuses for checked_call.hpp, and the two CUDA idioms around them.
#include <cuda_runtime.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<cudaError_t> {
  static constexpr const char* library = "CUDA";
  static bool ok(cudaError_t status) { return status == cudaSuccess; }
  // Once the runtime is unloading (a destructor run at process exit) what is left goes with the
  // process.
  static bool ok_at_teardown(cudaError_t status) {
    return status == cudaSuccess || status == cudaErrorCudartUnloading;
  }
  static std::string reason(cudaError_t status) {
    return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  }
};

namespace detail {

inline bool cuda_query(cudaError_t status, const char* plugin, const char* call, const char* file,
                       int line) {
  if (status == cudaErrorNotReady) {
    // "Not ready" is an answer, not an error; keep it out of this thread's last-error slot so
    // that the next launch check on this thread, in this plugin or another, does not see it.
    (void)cudaGetLastError();
    return false;
  }
  checked_call(status, plugin, call, file, line);
  return true;
}

}  // namespace detail
}  // namespace ptdp

// After a kernel launch: a bad launch configuration is reported at the launch that made it.
#define PTDP_LAUNCH_CHECK(kernel) PTDP_CALL_AS(cudaGetLastError(), "launch of " #kernel)

// cudaEventQuery or cudaStreamQuery: true when the work is done, false while it is not, and
// ptdp::CallError for any other answer.
#define PTDP_CUDA_QUERY(call) \
  ::ptdp::detail::cuda_query((call), PTDP_PLUGIN_NAME, #call, __FILE__, __LINE__)
