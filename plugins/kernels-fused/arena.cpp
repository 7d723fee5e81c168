#include "arena.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

std::shared_ptr<DeviceArena> DeviceArena::create(int device, PluginLog log) {
  return std::shared_ptr<DeviceArena>(new DeviceArena(device, std::move(log)));
}

DeviceArena::~DeviceArena() {
  // May run at process exit, after the CUDA runtime has gone: PTDP_TEARDOWN_CALL lets that pass.
  TeardownFailures failures;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_)
    for (void* block : blocks) PTDP_TEARDOWN_CALL(failures, cudaFree(block));
  log_.write_failures("kernels-fused: freeing the device arena of device " + std::to_string(device_), failures);
}

size_t DeviceArena::size_class(size_t bytes) {
  // Small blocks in 512-byte steps, large ones in 2 MiB steps: few classes, little waste.
  constexpr size_t kSmallStep = 512, kLargeStep = size_t(2) << 20;
  if (bytes == 0) bytes = 1;
  size_t step = bytes < (size_t(1) << 20) ? kSmallStep : kLargeStep;
  return (bytes + step - 1) / step * step;
}

std::shared_ptr<void> DeviceArena::allocate(size_t bytes) {
  const size_t size = size_class(bytes);
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      cached_ -= size;
    }
    if (!block) {
      PTDP_CALL(cudaSetDevice(device_));
      cudaError_t status = cudaMalloc(&block, size);
      if (status == cudaErrorMemoryAllocation) {
        // Give every cached block back and try once more before failing. cudaMalloc leaves its
        // failure in the last-error slot, where the next launch check would take it for its own.
        (void)cudaGetLastError();
        free_cached_locked();
        status = cudaMalloc(&block, size);
      }
      if (status != cudaSuccess) {
        (void)cudaGetLastError();
        throw Error("kernels-fused: out of device memory on device " + std::to_string(device_) +
                    ": cudaMalloc of " + std::to_string(size) + " bytes failed (" +
                    status_text(status) + "); " + std::to_string(in_use_) + " bytes in use");
      }
    }
    in_use_ += size;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
  }
  auto self = shared_from_this();
  return std::shared_ptr<void>(block, [self, size](void* p) { self->release(p, size); });
}

void DeviceArena::release(void* block, size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_ -= size;
  cached_ += size;
  free_[size].push_back(block);
}

void DeviceArena::free_cached_locked() {
  // cudaFree waits for the device, so pending work that still reads a cached block finishes first.
  for (auto& [size, blocks] : free_)
    for (void* block : blocks) PTDP_CALL(cudaFree(block));
  free_.clear();
  cached_ = 0;
}

void DeviceArena::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_cached_locked();
}

size_t DeviceArena::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

size_t DeviceArena::peak_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_in_use_;
}

void DeviceArena::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_in_use_ = in_use_;
}

size_t DeviceArena::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
