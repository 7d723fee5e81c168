#include "host_upload.hpp"

#include <cstring>

#include "cuda_check.hpp"

namespace ptdp::fused {

HostUpload::HostUpload(cudaStream_t stream) : stream_(stream), slots_(kSlots) {
  for (Slot& slot : slots_) PTDP_CUDA_CHECK(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
}

HostUpload::~HostUpload() {
  for (Slot& slot : slots_) {
    if (slot.done) {
      (void)cudaEventSynchronize(slot.done);
      (void)cudaEventDestroy(slot.done);
    }
    if (slot.host) (void)cudaFreeHost(slot.host);
  }
}

void HostUpload::copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  Slot& slot = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  PTDP_CUDA_CHECK(cudaEventSynchronize(slot.done));
  if (slot.capacity < bytes) {
    if (slot.host) PTDP_CUDA_CHECK(cudaFreeHost(slot.host));
    slot.host = nullptr;
    slot.capacity = 0;
    size_t capacity = bytes < 65536 ? 65536 : bytes + bytes / 2;
    PTDP_CUDA_CHECK(cudaMallocHost(&slot.host, capacity));
    slot.capacity = capacity;
  }
  std::memcpy(slot.host, src, bytes);
  PTDP_CUDA_CHECK(cudaMemcpyAsync(dst, slot.host, bytes, cudaMemcpyHostToDevice, stream_));
  PTDP_CUDA_CHECK(cudaEventRecord(slot.done, stream_));
}

}  // namespace ptdp::fused
