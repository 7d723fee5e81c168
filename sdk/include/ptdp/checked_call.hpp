#pragma once
// Checked calls: every call into a library that answers with a status code (CUDA, cuBLAS, cuDNN,
// NCCL, UCX, CUPTI) goes through one of these macros, so that a failure says which plugin, which
// call, what the library said and where, and a failure far from its cause (an asynchronous
// kernel fault) still says where it surfaced:
//
//   PTDP_CALL(call)        throws ptdp::CallError unless the status is a success; returns a
//                          status code (NCCL's ncclInProgress is a success the caller waits on).
//   PTDP_CALL_AS(status, text)
//                          the same for a status that is not the call's own result (UCX's status
//                          pointers, cudaGetLastError after a launch), named by `text`.
//   PTDP_TEARDOWN_CALL(failures, call)
//                          for destructors and shutdown paths, where nothing may throw: keeps the
//                          failure in a TeardownFailures for the caller to log or return; true
//                          when the call worked.
//
// A library's statuses are known through ptdp::CallStatus, specialized in its own small header
// (checked_call_cuda.hpp, checked_call_nccl.hpp, ...), so that a plugin without CUDA includes no
// CUDA header. The plugin's name comes from PTDP_PLUGIN_NAME, which ptdp_add_plugin() defines
// (ptdp_set_plugin_name() for a library of the plugin's code built on its own).
//
//   comm-ucx: ucp_worker_create(context_, &worker_params, &worker_) failed: UCX error: Input/output
//   error [ucx_world.cpp:126]
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ptdp/error.hpp"

namespace ptdp {

// One specialization per status type, with
//   static constexpr const char* library;            "CUDA", "NCCL", ...
//   static bool ok(const Status&);                   the call did what was asked
//   static bool ok_at_teardown(const Status&);       nothing worth reporting in a teardown
//   static std::string reason(const Status&);        the library's own words for it
template <class Status>
struct CallStatus;

// "NCCL error: unhandled system error; NCCL reported: ...": a status in the library's words.
template <class Status>
std::string status_text(const Status& status) {
  return std::string(CallStatus<Status>::library) + " error: " + CallStatus<Status>::reason(status);
}

// A library call that failed. what() is "<plugin>: <detail>".
class CallError : public Error {
 public:
  CallError(const std::string& plugin, const std::string& detail)
      : Error(plugin + ": " + detail), detail_(detail) {}

  // "<call> failed: <status text> [<file>:<line>]": for a message that names the plugin already.
  const std::string& detail() const { return detail_; }

  static std::string describe(std::string_view call, const std::string& status, const char* file,
                              int line) {
    const char* slash = std::strrchr(file, '/');
    return std::string(call) + " failed: " + status + " [" + (slash ? slash + 1 : file) + ":" +
           std::to_string(line) + "]";
  }

 private:
  std::string detail_;
};

// What an exception says, without the plugin's name when it is a CallError: for a caller that
// puts its own prefix, which names the plugin, in front.
inline std::string reason_of(const std::exception& e) {
  if (const auto* call = dynamic_cast<const CallError*>(&e)) return call->detail();
  return e.what();
}

// The failures of one teardown: the first is kept whole (the later ones are usually its
// consequences), the others counted.
class TeardownFailures {
 public:
  void note(std::string failure) {
    if (first_.empty()) first_ = std::move(failure);
    else ++more_;
  }
  bool empty() const { return first_.empty(); }
  // "" when nothing failed, else the first failure and how many followed it.
  std::string summary() const {
    if (more_ == 0) return first_;
    return first_ + " (and " + std::to_string(more_) + " more failure" + (more_ > 1 ? "s" : "") +
           ")";
  }

 private:
  std::string first_;
  int more_ = 0;
};

namespace detail {

// Returns a status that is a code (NCCL's ncclInProgress is a success the caller tells apart),
// not a result object (the cuDNN frontend's, which asks not to be discarded).
template <class Status>
auto checked_call(Status status, const char* plugin, std::string_view call, const char* file,
                  int line) {
  if (!CallStatus<Status>::ok(status))
    throw CallError(plugin, CallError::describe(call, status_text(status), file, line));
  if constexpr (std::is_enum_v<Status>) return status;
}

template <class Status>
bool teardown_call(TeardownFailures& failures, const Status& status, std::string_view call,
                   const char* file, int line) {
  if (CallStatus<Status>::ok_at_teardown(status)) return true;
  failures.note(CallError::describe(call, status_text(status), file, line));
  return false;
}

}  // namespace detail
}  // namespace ptdp

#define PTDP_CALL(call) \
  ::ptdp::detail::checked_call((call), PTDP_PLUGIN_NAME, #call, __FILE__, __LINE__)
#define PTDP_CALL_AS(status, text) \
  ::ptdp::detail::checked_call((status), PTDP_PLUGIN_NAME, (text), __FILE__, __LINE__)
#define PTDP_TEARDOWN_CALL(failures, call) \
  ::ptdp::detail::teardown_call((failures), (call), #call, __FILE__, __LINE__)
