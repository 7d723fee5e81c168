// BufferMemory for CUDA buffers: scratch in device memory, copies and reductions on the bound
// stream, each waited for so that what it produced can be handed to UCX at once.
//
// UCX is handed only device memory this object allocated, never the caller's, and none of it is
// freed before the world goes. UCX's cuda_ipc transport keeps what it learnt of an allocation:
// the sender its IPC handle, the receiver its mapping. It learns that an allocation was freed
// from hooks on cudaFree, which do not see a statically linked CUDA runtime (kernels-fused's, the
// tests'). A caller's buffer freed and allocated again at the same address was then read through
// the old mapping (an all-reduce of 1 float gave 24 instead of 26 on the H200) or refused
// (`cuIpcOpenMemHandle() failed: operation not permitted`). The price is a device-to-device copy
// into and out of the staged region of every operation.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "buffer_memory.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::comm_ucx {

namespace {

template <class T>
__device__ T combine(T a, T b, ReduceOp op) {
  return op == ReduceOp::Sum ? a + b : op == ReduceOp::Max ? (a > b ? a : b) : (a < b ? a : b);
}

template <class T>
__global__ void reduce_kernel(T* acc, const T* in, size_t count, ReduceOp op) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    acc[i] = combine(acc[i], in[i], op);
}

// bf16 and fp16 are combined in fp32 and rounded to nearest even, as the host path does.
__device__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ float to_float(__half v) { return __half2float(v); }
template <class T>
__device__ T from_float(float v);
template <>
__device__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __half from_float(float v) { return __float2half_rn(v); }

template <class T>
__global__ void reduce_16bit_kernel(T* acc, const T* in, size_t count, ReduceOp op) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count; i += size_t{gridDim.x} * blockDim.x)
    acc[i] = from_float<T>(combine(to_float(acc[i]), to_float(in[i]), op));
}

class CudaMemory final : public BufferMemory {
 public:
  CudaMemory(int device, cudaStream_t stream, PluginLog log) : device_(device), stream_(stream), log_(std::move(log)) {}
  ~CudaMemory() override {
    TeardownFailures failures;
    for (void* p : retired_) PTDP_TEARDOWN_CALL(failures, cudaFree(p));
    for (const Region& r : regions_) PTDP_TEARDOWN_CALL(failures, cudaFree(r.data));
    for (void* p : {scratch_, staging_})
      if (p) PTDP_TEARDOWN_CALL(failures, cudaFree(p));
    log_.write_failures("comm-ucx: freeing the staged memory of CUDA device " + std::to_string(device_), failures);
  }

  ucs_memory_type_t ucx_type() const override { return UCS_MEMORY_TYPE_CUDA; }

  void acquire() override {
    PTDP_CALL(cudaSetDevice(device_));
    PTDP_CALL(cudaStreamSynchronize(stream_));
  }

  char* scratch(size_t bytes) override { return grow(scratch_, scratch_bytes_, bytes); }

  void copy(void* dst, const void* src, size_t bytes) override {
    if (dst == src || bytes == 0) return;
    const char* d = static_cast<const char*>(dst);
    const char* s = static_cast<const char*>(src);
    if (d < s + bytes && s < d + bytes) {  // overlapping: cudaMemcpy does not promise memmove
      char* stage = grow(staging_, staging_bytes_, bytes);
      PTDP_CALL(cudaMemcpyAsync(stage, src, bytes, cudaMemcpyDeviceToDevice, stream_));
      src = stage;
    }
    PTDP_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
    PTDP_CALL(cudaStreamSynchronize(stream_));
  }

  void reduce(void* acc, const void* in, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return;
    constexpr int kThreads = 256;
    const unsigned blocks = static_cast<unsigned>(std::min<size_t>((count + kThreads - 1) / kThreads, 4096));
    switch (dtype) {
      case DType::F32:
        reduce_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<float*>(acc), static_cast<const float*>(in), count, op);
        break;
      case DType::I32:
        reduce_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<int32_t*>(acc), static_cast<const int32_t*>(in),
                                                        count, op);
        break;
      case DType::I64:
        reduce_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<long long*>(acc),
                                                        static_cast<const long long*>(in), count, op);
        break;
      case DType::BF16:
        reduce_16bit_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<__nv_bfloat16*>(acc),
                                                              static_cast<const __nv_bfloat16*>(in), count, op);
        break;
      case DType::F16:
        reduce_16bit_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<__half*>(acc), static_cast<const __half*>(in),
                                                              count, op);
        break;
      default:
        throw Error(std::string("comm-ucx: cannot reduce ") + dtype_name(dtype));
    }
    PTDP_LAUNCH_CHECK(reduce_kernel);
    PTDP_CALL(cudaStreamSynchronize(stream_));
  }

  char* stage(const void* caller, size_t bytes, bool copy_in) override {
    Region* region = lend(bytes);
    if (copy_in) copy(region->data, caller, bytes);
    return region->data;
  }

  void unstage(void* caller, char* staged, size_t bytes, bool copy_out) override {
    for (Region& r : regions_)
      if (r.data == staged) {
        if (copy_out) copy(caller, staged, bytes);
        r.lent = false;
        return;
      }
    throw Error("comm-ucx: unstage of a region this memory did not lend");
  }

 private:
  struct Region {
    char* data;
    size_t bytes;
    bool lent;
  };

  // The smallest free region that holds `bytes`, or a new one of the next power of two (so that
  // regions are reused across the sizes of one run).
  Region* lend(size_t bytes) {
    Region* best = nullptr;
    for (Region& r : regions_)
      if (!r.lent && r.bytes >= bytes && (!best || r.bytes < best->bytes)) best = &r;
    if (!best) {
      size_t size = kSmallestRegion;
      while (size < bytes) size *= 2;
      void* data = nullptr;
      PTDP_CALL(cudaMalloc(&data, size));
      regions_.push_back(Region{static_cast<char*>(data), size, false});
      best = &regions_.back();
    }
    best->lent = true;
    return best;
  }

  static constexpr size_t kSmallestRegion = 64 * 1024;

  // A smaller buffer is kept, not freed, until this memory goes: peers sent from it hold CUDA IPC
  // mappings of it in UCX's cuda_ipc cache, and the driver handing its address out again would
  // make their next mapping of this rank's memory fail. Doubling bounds what is kept to the size
  // of the largest buffer.
  char* grow(void*& buffer, size_t& capacity, size_t bytes) {
    if (capacity < bytes) {
      const size_t size = std::max(bytes, 2 * capacity);
      void* bigger = nullptr;
      PTDP_CALL(cudaMalloc(&bigger, size));
      if (buffer) retired_.push_back(buffer);
      buffer = bigger;
      capacity = size;
    }
    return static_cast<char*>(buffer);
  }

  int device_;
  cudaStream_t stream_;
  PluginLog log_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  std::vector<void*> retired_;
  std::vector<Region> regions_;
};

}  // namespace

bool cuda_memory_built() { return true; }

void activate_cuda_device(int device) {
  int count = 0;
  PTDP_CALL(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw Error("comm-ucx: CUDA device " + std::to_string(device) + " but this process sees " + std::to_string(count) +
                " CUDA device(s)");
  PTDP_CALL(cudaSetDevice(device));
  PTDP_CALL(cudaFree(nullptr));  // creates the primary context now
}

std::unique_ptr<BufferMemory> make_cuda_memory(int device, void* stream, PluginLog log) {
  return std::make_unique<CudaMemory>(device, static_cast<cudaStream_t>(stream), std::move(log));
}

}  // namespace ptdp::comm_ucx
