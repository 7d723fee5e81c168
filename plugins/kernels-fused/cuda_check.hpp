#pragma once
// Every CUDA runtime and cuBLAS call goes through one of these macros: a failure throws
// ptdp::Error naming the call, the library's reason, and the file and line of the call, so a
// failure far from its cause (an asynchronous kernel fault) still says where it surfaced.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "ptdp/error.hpp"

namespace ptdp::fused {

[[noreturn]] inline void throw_call_error(const char* library, const char* call, const char* reason,
                                          const char* file, int line) {
  throw Error(std::string("kernels-fused: ") + library + " call " + call + " failed: " + reason + " [" +
              file + ":" + std::to_string(line) + "]");
}

}  // namespace ptdp::fused

#define PTDP_CUDA_CHECK(call)                                                                 \
  do {                                                                                        \
    cudaError_t ptdp_status_ = (call);                                                        \
    if (ptdp_status_ != cudaSuccess)                                                          \
      ::ptdp::fused::throw_call_error("CUDA", #call, cudaGetErrorString(ptdp_status_), __FILE__, \
                                      __LINE__);                                              \
  } while (0)

#define PTDP_CUBLAS_CHECK(call)                                                                  \
  do {                                                                                           \
    cublasStatus_t ptdp_status_ = (call);                                                        \
    if (ptdp_status_ != CUBLAS_STATUS_SUCCESS)                                                   \
      ::ptdp::fused::throw_call_error("cuBLAS", #call, cublasGetStatusString(ptdp_status_), __FILE__, \
                                      __LINE__);                                                 \
  } while (0)

// After a kernel launch: a bad launch configuration is reported here, at the launch that made it.
#define PTDP_LAUNCH_CHECK(kernel) \
  ::ptdp::fused::check_launch(#kernel, __FILE__, __LINE__)

namespace ptdp::fused {

inline void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) throw_call_error("CUDA", (std::string("launch of ") + kernel).c_str(),
                                              cudaGetErrorString(status), file, line);
}

}  // namespace ptdp::fused
