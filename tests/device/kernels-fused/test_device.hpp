#pragma once
// A stream, an arena and a kernel context on device 0, for calling the launchers directly.
#include <cuda_runtime.h>

#include <memory>

#include "arena.hpp"
#include "check.hpp"
#include "kernel_context.hpp"

namespace ptdp::fused::test {

struct TestDevice {
  cudaStream_t stream = nullptr;
  std::shared_ptr<DeviceArena> arena;
  KernelContext ctx;

  TestDevice() {
    cuda_ok(cudaSetDevice(0), "cudaSetDevice");
    cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
    arena = DeviceArena::create(0);
    int sms = 0;
    cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
    ctx = KernelContext{stream, arena.get(), sms};
  }
  ~TestDevice() {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  void sync() const { cuda_ok(cudaStreamSynchronize(stream), "kernel"); }
};

inline act_t* bf(DeviceArray<uint16_t>& a) { return reinterpret_cast<act_t*>(a.get()); }

}  // namespace ptdp::fused::test
