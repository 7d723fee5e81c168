#include "device_memory.hpp"

namespace {

__global__ void spin(const volatile int* flag) {
  while (*flag == 0) __nanosleep(10000);
}

}  // namespace

void spin_until_released(const HostFlag& flag, cudaStream_t stream) {
  spin<<<1, 1, 0, stream>>>(flag.device());
  TEST_CUDA(cudaGetLastError());
}
