#include "host_upload.hpp"

#include <algorithm>
#include <cstring>

#include "cuda_check.hpp"

namespace ptdp::fused {

HostUpload::~HostUpload() {
  for (Buffer& b : buffers_) {
    (void)cudaEventSynchronize(b.done);
    (void)cudaEventDestroy(b.done);
    (void)cudaFreeHost(b.host);
  }
}

HostUpload::Buffer& HostUpload::free_buffer(size_t bytes) {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    Buffer& b = buffers_[(next_ + i) % buffers_.size()];
    if (b.capacity < bytes) continue;
    const cudaError_t status = cudaEventQuery(b.done);
    if (status == cudaErrorNotReady) continue;
    PTDP_CUDA_CHECK(status);
    next_ = (next_ + i + 1) % buffers_.size();
    return b;
  }
  Buffer b;
  b.capacity = std::max<size_t>(bytes, 65536);
  PTDP_CUDA_CHECK(cudaMallocHost(&b.host, b.capacity));
  PTDP_CUDA_CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));
  buffers_.push_back(b);
  return buffers_.back();
}

void HostUpload::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  Buffer& b = free_buffer(bytes);
  std::memcpy(b.host, src, bytes);
  PTDP_CUDA_CHECK(cudaMemcpyAsync(dst, b.host, bytes, cudaMemcpyHostToDevice, stream_));
  PTDP_CUDA_CHECK(cudaEventRecord(b.done, stream_));
}

}  // namespace ptdp::fused
