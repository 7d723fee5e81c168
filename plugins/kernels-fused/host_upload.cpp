#include "host_upload.hpp"

#include <algorithm>
#include <cstring>

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

HostUpload::~HostUpload() {
  TeardownFailures failures;
  for (Buffer& b : buffers_) {
    PTDP_TEARDOWN_CALL(failures, cudaEventSynchronize(b.done));
    PTDP_TEARDOWN_CALL(failures, cudaEventDestroy(b.done));
    PTDP_TEARDOWN_CALL(failures, cudaFreeHost(b.host));
  }
  log_.write_failures("kernels-fused: releasing the pinned upload buffers", failures);
}

HostUpload::Buffer& HostUpload::free_buffer(size_t bytes) {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    Buffer& b = buffers_[(next_ + i) % buffers_.size()];
    if (b.capacity < bytes) continue;
    if (!PTDP_CUDA_QUERY(cudaEventQuery(b.done))) continue;
    next_ = (next_ + i + 1) % buffers_.size();
    return b;
  }
  Buffer b;
  b.capacity = std::max<size_t>(bytes, 65536);
  PTDP_CALL(cudaMallocHost(&b.host, b.capacity));
  PTDP_CALL(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  buffers_.push_back(b);
  return buffers_.back();
}

void HostUpload::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  Buffer& b = free_buffer(bytes);
  std::memcpy(b.host, src, bytes);
  PTDP_CALL(cudaMemcpyAsync(dst, b.host, bytes, cudaMemcpyHostToDevice, stream_));
  PTDP_CALL(cudaEventRecord(b.done, stream_));
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
