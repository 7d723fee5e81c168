#pragma once
// NCCL's results for checked_call.hpp. ncclInProgress counts as a success: a non-blocking
// communicator is still working, which PTDP_CALL returns for the caller to wait on.
#include <nccl.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<ncclResult_t> {
  static constexpr const char* library = "NCCL";
  static bool ok(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }
  static bool ok_at_teardown(ncclResult_t result) { return ok(result); }
  // "<what the code means>; NCCL reported: <ncclGetLastError>" (the second part when NCCL has one).
  static std::string reason(ncclResult_t result) {
    std::string text = ncclGetErrorString(result);
    // NCCL keeps the last error per thread; the comm argument is unused.
    const char* last = ncclGetLastError(nullptr);
    if (last && *last) text += std::string("; NCCL reported: ") + last;
    return text;
  }
};

}  // namespace ptdp
