#pragma once
// Device memory for the checks: a buffer that frees itself, typed upload and download with the
// host-side conversion of every dtype, and the CUDA call check the checks use.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ptdp/tensor.hpp"

#define TEST_CUDA(call) check_test_cuda((call), #call, __FILE__, __LINE__)
void check_test_cuda(cudaError_t result, const char* call, const char* file, int line);

class DeviceBuffer {
 public:
  DeviceBuffer(ptdp::DType dtype, int64_t count, int device);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  const ptdp::Tensor& tensor() const { return tensor_; }
  // Values are converted to the buffer's dtype; the checks use small integers, which every
  // dtype holds exactly.
  void upload(const std::vector<double>& values);
  std::vector<double> download() const;

 private:
  ptdp::Tensor tensor_;
};

// Memory the GPU reads while the host writes it: a flag that releases spin_until_released().
class HostFlag {
 public:
  HostFlag();
  ~HostFlag();
  HostFlag(const HostFlag&) = delete;
  HostFlag& operator=(const HostFlag&) = delete;
  void release() { *host_ = 1; }
  const volatile int* device() const { return device_; }

 private:
  volatile int* host_ = nullptr;
  volatile int* device_ = nullptr;
};

// Occupies `stream` until the flag is released: work queued behind it cannot start.
void spin_until_released(const HostFlag& flag, cudaStream_t stream);
