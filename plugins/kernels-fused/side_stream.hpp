#pragma once
// The second stream of a bound backend (LayerKernels::side_stream): the core's data-parallel
// reduction runs on it beside the backward on the compute stream. Two events order the streams
// both ways; an event's wait takes its latest record, so one event per direction serves every
// bucket and every flush.
#include <cuda_runtime.h>

#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class SideStream {
 public:
  SideStream(cudaStream_t compute, const PluginLog& log);
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  cudaStream_t stream() const { return side_; }
  void waits_for_compute();  // side work from here on follows compute work enqueued so far
  void compute_waits();      // compute work from here on follows side work enqueued so far

 private:
  cudaStream_t compute_;
  const PluginLog& log_;
  cudaStream_t side_ = nullptr;
  cudaEvent_t compute_done_ = nullptr, side_done_ = nullptr;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
