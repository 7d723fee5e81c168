#pragma once
// HostUpload: copies small host arrays (token ids, targets, kernel metadata) to the device without
// stalling the stream or the host. Data goes through pinned buffers; a buffer is reused only once
// the copy that last read it has completed, and when none is free another is added. The host
// never waits here, so it can never wait on a stream that is itself waiting for a peer's
// collective.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class HostUpload {
 public:
  // `log` hears of pinned buffers that cannot be released when the uploader goes.
  explicit HostUpload(cudaStream_t stream, PluginLog log = {}) : stream_(stream), log_(std::move(log)) {}
  ~HostUpload();
  HostUpload(const HostUpload&) = delete;
  HostUpload& operator=(const HostUpload&) = delete;

  // Enqueues a copy of `bytes` from host `src` to device `dst` on the stream; `src` may be reused
  // as soon as this returns.
  void copy(void* dst, const void* src, size_t bytes);

 private:
  struct Buffer {
    void* host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
  };
  Buffer& free_buffer(size_t bytes);

  cudaStream_t stream_;
  PluginLog log_;
  std::vector<Buffer> buffers_;
  size_t next_ = 0;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
