#pragma once
// Every CUDA and NCCL call of comm-nccl goes through one of these macros, so that a failure names
// the call, the file and the line (the way NCCL's own CUDACHECK/NCCLCHECK do).
//
//   CUDA_CHECK(call)  throws CallFailure unless the call returned cudaSuccess.
//   CUDA_QUERY(call)  for cudaEventQuery/cudaStreamQuery: true when done, false when not ready
//                     yet, throws CallFailure on any other result.
//   NCCL_CHECK(call)  throws CallFailure unless the call returned ncclSuccess or ncclInProgress
//                     (a non-blocking communicator still working); returns which of the two.
//   CUDA_REPORT(call), NCCL_REPORT(call)
//                     for teardown, where nothing may throw: the failure text, or "" on success.
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace ptdp::comm_nccl {

// A CUDA or NCCL call failed. The communicator catches it, adds who and what (rank, group,
// operation), tears the NCCL communicator down and throws ptdp::Error.
class CallFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string cuda_failure(cudaError_t result, const char* call, const char* file, int line);
std::string nccl_failure(ncclResult_t result, const char* call, const char* file, int line);

void check_cuda(cudaError_t result, const char* call, const char* file, int line);
bool check_cuda_query(cudaError_t result, const char* call, const char* file, int line);
ncclResult_t check_nccl(ncclResult_t result, const char* call, const char* file, int line);
std::string report_cuda(cudaError_t result, const char* call, const char* file, int line);
std::string report_nccl(ncclResult_t result, const char* call, const char* file, int line);

// "<what the code means>; NCCL reported: <ncclGetLastError>" (the second part when NCCL has one).
std::string nccl_error_text(ncclResult_t result);

}  // namespace ptdp::comm_nccl

#define CUDA_CHECK(call) ::ptdp::comm_nccl::check_cuda((call), #call, __FILE__, __LINE__)
#define CUDA_QUERY(call) ::ptdp::comm_nccl::check_cuda_query((call), #call, __FILE__, __LINE__)
#define NCCL_CHECK(call) ::ptdp::comm_nccl::check_nccl((call), #call, __FILE__, __LINE__)
#define CUDA_REPORT(call) ::ptdp::comm_nccl::report_cuda((call), #call, __FILE__, __LINE__)
#define NCCL_REPORT(call) ::ptdp::comm_nccl::report_nccl((call), #call, __FILE__, __LINE__)
