#pragma once
// The cuDNN frontend's results (cudnn_frontend::error_t) for checked_call.hpp.
#include <cudnn_frontend.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<cudnn_frontend::error_t> {
  static constexpr const char* library = "cuDNN frontend";
  static bool ok(const cudnn_frontend::error_t& result) { return result.is_good(); }
  static bool ok_at_teardown(const cudnn_frontend::error_t& result) { return ok(result); }
  static std::string reason(const cudnn_frontend::error_t& result) { return result.err_msg; }
};

}  // namespace ptdp
