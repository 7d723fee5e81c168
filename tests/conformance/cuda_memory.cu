// Device memory for communicators that move CUDA memory: one GPU per rank (local rank modulo
// the GPUs present), a non-blocking stream bound to the communicator.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "test_memory.hpp"

namespace ptdp::conformance {

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
}

// Spins for `cycles` clock ticks on one thread, then every thread fills its elements.
__global__ void fill_after_spin(float* dst, float value, size_t count, long long cycles) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
  }
  __syncthreads();
  for (size_t i = threadIdx.x; i < count; i += blockDim.x) dst[i] = value;
}

class CudaMemory final : public TestMemory {
 public:
  explicit CudaMemory(int local_rank) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count < 1) throw std::runtime_error("no CUDA device for rank " + std::to_string(local_rank));
    device_ = local_rank % count;
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  }
  ~CudaMemory() override {
    cudaStreamDestroy(stream_);
    if (slab_) cudaFree(slab_);
  }

  Device device() const override { return Device{MemoryKind::Cuda, device_}; }
  // Buffers come from one slab that lives as long as the rank, as a kernels plugin's caching
  // arena keeps its memory: device memory freed to the driver and allocated again at the same
  // address while a peer still has it mapped cannot be mapped again through CUDA IPC (UCX's
  // cuda_ipc caches its peers' mappings), which is not what the suite is about.
  std::shared_ptr<void> allocate(size_t bytes) override {
    constexpr size_t kSlab = size_t{1} << 30, kAlign = 256;
    if (!slab_) check(cudaMalloc(&slab_, kSlab), "cudaMalloc of the test slab");
    const size_t start = (used_ + kAlign - 1) / kAlign * kAlign;
    if (start + bytes > kSlab) throw std::runtime_error("the test's device slab of 1 GiB is full");
    used_ = start + bytes;
    char* p = static_cast<char*>(slab_) + start;
    check(cudaMemset(p, 0, bytes), "cudaMemset");
    return std::shared_ptr<void>(p, [](void*) {});
  }
  void upload(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }
  void* stream() override { return stream_; }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void fill_later(void* dst, float value, size_t count, int delay_ms) override {
    int khz = 0;
    check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device_), "cudaDeviceGetAttribute");
    fill_after_spin<<<1, 1024, 0, stream_>>>(static_cast<float*>(dst), value, count, static_cast<long long>(khz) * delay_ms);
    check(cudaGetLastError(), "fill_after_spin launch");
  }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  void* slab_ = nullptr;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<TestMemory> make_cuda_memory(int local_rank) { return std::make_unique<CudaMemory>(local_rank); }

}  // namespace ptdp::conformance
