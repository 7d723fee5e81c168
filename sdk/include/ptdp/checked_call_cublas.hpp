#pragma once
// cuBLAS's and cuBLASLt's statuses (one type, cublasStatus_t) for checked_call.hpp.
#include <cublas_api.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<cublasStatus_t> {
  static constexpr const char* library = "cuBLAS";
  static bool ok(cublasStatus_t status) { return status == CUBLAS_STATUS_SUCCESS; }
  static bool ok_at_teardown(cublasStatus_t status) { return ok(status); }
  static std::string reason(cublasStatus_t status) {
    return std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status);
  }
};

}  // namespace ptdp
