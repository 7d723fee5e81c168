#pragma once
// The benchmarks' timer (kernels-fused-adam-bandwidth, kernels-fused-fp8-cast-bandwidth): the mean
// milliseconds of one `launch` on `stream`, over `launches` after `warmups` unmeasured, from CUDA
// events around the whole run.
#include <cuda_runtime.h>

#include <functional>

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused::bench {

inline float mean_launch_ms(cudaStream_t stream, int warmups, int launches, const std::function<void()>& launch) {
  for (int i = 0; i < warmups; ++i) launch();
  cudaEvent_t begin, end;
  PTDP_CALL(cudaEventCreate(&begin));
  PTDP_CALL(cudaEventCreate(&end));
  PTDP_CALL(cudaEventRecord(begin, stream));
  for (int i = 0; i < launches; ++i) launch();
  PTDP_CALL(cudaEventRecord(end, stream));
  PTDP_CALL(cudaEventSynchronize(end));
  float ms = 0;
  PTDP_CALL(cudaEventElapsedTime(&ms, begin, end));
  PTDP_CALL(cudaEventDestroy(begin));
  PTDP_CALL(cudaEventDestroy(end));
  PTDP_CALL(cudaGetLastError());
  return ms / launches;
}

}  // namespace ptdp::fused::bench
