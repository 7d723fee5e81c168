#include "nccl_check.hpp"

#include <cstring>

namespace ptdp::comm_nccl {
namespace {

// "ncclAllReduce(buffer.data, ...)" -> "ncclAllReduce": the arguments are noise in a message.
std::string function_name(const char* call) {
  const char* open = std::strchr(call, '(');
  return open ? std::string(call, open) : std::string(call);
}

std::string location(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

}  // namespace

std::string nccl_error_text(ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  // The last error is kept per thread by NCCL; the comm argument is unused.
  const char* last = ncclGetLastError(nullptr);
  if (last && *last) text += std::string("; NCCL reported: ") + last;
  return text;
}

std::string cuda_failure(cudaError_t result, const char* call, const char* file, int line) {
  return function_name(call) + " failed: " + cudaGetErrorName(result) + ": " +
         cudaGetErrorString(result) + " [" + location(file, line) + "]";
}

std::string nccl_failure(ncclResult_t result, const char* call, const char* file, int line) {
  return function_name(call) + " failed: NCCL error: " + nccl_error_text(result) + " [" +
         location(file, line) + "]";
}

void check_cuda(cudaError_t result, const char* call, const char* file, int line) {
  if (result != cudaSuccess) throw CallFailure(cuda_failure(result, call, file, line));
}

bool check_cuda_query(cudaError_t result, const char* call, const char* file, int line) {
  if (result == cudaSuccess) return true;
  if (result == cudaErrorNotReady) {
    // "Not ready" is an answer, not an error; keep it out of this thread's last-error slot so
    // that the kernels plugin's next cudaGetLastError() does not see it.
    (void)cudaGetLastError();
    return false;
  }
  throw CallFailure(cuda_failure(result, call, file, line));
}

ncclResult_t check_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  if (result != ncclSuccess && result != ncclInProgress)
    throw CallFailure(nccl_failure(result, call, file, line));
  return result;
}

std::string report_cuda(cudaError_t result, const char* call, const char* file, int line) {
  return result == cudaSuccess ? std::string() : cuda_failure(result, call, file, line);
}

std::string report_nccl(ncclResult_t result, const char* call, const char* file, int line) {
  return result == ncclSuccess || result == ncclInProgress ? std::string()
                                                           : nccl_failure(result, call, file, line);
}

}  // namespace ptdp::comm_nccl
