#pragma once
// UCX's statuses (ucs_status_t) for checked_call.hpp. A call that answers with a status pointer
// is checked with PTDP_CALL_AS(ucs_status_of(pointer), "...").
#include <ucs/type/status.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<ucs_status_t> {
  static constexpr const char* library = "UCX";
  static bool ok(ucs_status_t status) { return status == UCS_OK; }
  static bool ok_at_teardown(ucs_status_t status) { return ok(status); }
  static std::string reason(ucs_status_t status) { return ucs_status_string(status); }
};

// The status a status pointer stands for: UCS_OK for a request or for none.
inline ucs_status_t ucs_status_of(ucs_status_ptr_t pointer) {
  return UCS_PTR_IS_ERR(pointer) ? UCS_PTR_STATUS(pointer) : UCS_OK;
}

}  // namespace ptdp
