#pragma once
// cuDNN's statuses for checked_call.hpp (the frontend's are in checked_call_cudnn_frontend.hpp).
#include <cudnn.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<cudnnStatus_t> {
  static constexpr const char* library = "cuDNN";
  static bool ok(cudnnStatus_t status) { return status == CUDNN_STATUS_SUCCESS; }
  static bool ok_at_teardown(cudnnStatus_t status) { return ok(status); }
  static std::string reason(cudnnStatus_t status) { return cudnnGetErrorString(status); }
};

}  // namespace ptdp
