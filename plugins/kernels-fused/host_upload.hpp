#pragma once
// HostUpload: copies small host arrays (token ids, targets, kernel metadata) to the device without
// stalling the stream. Data goes through a ring of pinned buffers; a buffer is written again only
// after the copy that last read it has completed, which by then it long has.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace ptdp::fused {

class HostUpload {
 public:
  explicit HostUpload(cudaStream_t stream);
  ~HostUpload();
  HostUpload(const HostUpload&) = delete;
  HostUpload& operator=(const HostUpload&) = delete;

  // Enqueues a copy of `bytes` from host `src` to device `dst` on the stream; `src` may be reused
  // as soon as this returns.
  void copy(void* dst, const void* src, size_t bytes);

 private:
  struct Slot {
    void* host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
  };
  static constexpr size_t kSlots = 8;
  cudaStream_t stream_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace ptdp::fused
