#pragma once
// BufferMemory: the memory a communicator operation's buffers live in. The ring and tree
// algorithms are written once; what differs between host and CUDA buffers is where scratch
// space comes from, how bytes are copied and reduced, and which memory type UCX is told.
// Copies and reductions have finished when they return, so their result may be sent at once.
#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>

#include "ptdp/communicator.hpp"
#include "ptdp/plugin_log.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp::comm_ucx {

class BufferMemory {
 public:
  virtual ~BufferMemory() = default;
  virtual ucs_memory_type_t ucx_type() const = 0;
  // Waits for work the kernels queued on the caller's buffers: an operation reads and writes
  // them from the host side, so they must be final (and no longer read) before it starts.
  virtual void acquire() = 0;
  // Space of at least `bytes`, valid until the next call to scratch().
  virtual char* scratch(size_t bytes) = 0;
  // memmove: the ranges may overlap.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  // acc[i] = op(acc[i], in[i]) for `count` elements of `dtype`.
  virtual void reduce(void* acc, const void* in, size_t count, DType dtype, ReduceOp op) = 0;
  // Where UCX moves `bytes` of the caller's buffer from or into. Host memory: the caller's buffer
  // itself. CUDA memory: a region of this memory's own, holding a copy of the caller's bytes when
  // `copy_in` (cuda_memory.cu says why). Any number of regions may be staged at once.
  virtual char* stage(const void* caller, size_t bytes, bool copy_in) = 0;
  // Ends a region's use, copying its bytes into the caller's buffer first when `copy_out`.
  virtual void unstage(void* caller, char* staged, size_t bytes, bool copy_out) = 0;
};

std::unique_ptr<BufferMemory> make_host_memory();

// Whether this build of comm-ucx moves CUDA memory (built with CUDA and a UCX that has the
// cuda_copy and cuda_ipc transports).
bool cuda_memory_built();
// Makes `device` current on the calling thread and creates its primary context, so that UCX,
// which works in the current context, finds one. Throws ptdp::Error naming the device.
void activate_cuda_device(int device);
// Memory of CUDA device `device`, ordered after the work on `stream` (a cudaStream_t; nullptr is
// the default stream). Reductions run on the GPU, on that stream. `log` hears of device memory
// that cannot be freed when it goes.
std::unique_ptr<BufferMemory> make_cuda_memory(int device, void* stream, PluginLog log);

}  // namespace ptdp::comm_ucx
