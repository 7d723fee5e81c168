#include "side_stream.hpp"

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

SideStream::SideStream(cudaStream_t compute, const PluginLog& log) : compute_(compute), log_(log) {
  PTDP_CALL(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
  try {
    PTDP_CALL(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
    PTDP_CALL(cudaEventCreateWithFlags(&side_done_, cudaEventDisableTiming));
  } catch (...) {
    // The destructor does not run for a half-built object.
    TeardownFailures failures;
    if (compute_done_) PTDP_TEARDOWN_CALL(failures, cudaEventDestroy(compute_done_));
    PTDP_TEARDOWN_CALL(failures, cudaStreamDestroy(side_));
    log_.write_failures("kernels-fused: after a failed side stream", failures);
    throw;
  }
}

SideStream::~SideStream() {
  TeardownFailures failures;
  // A reduction still running writes gradient memory the core is about to free.
  PTDP_TEARDOWN_CALL(failures, cudaStreamSynchronize(side_));
  PTDP_TEARDOWN_CALL(failures, cudaEventDestroy(compute_done_));
  PTDP_TEARDOWN_CALL(failures, cudaEventDestroy(side_done_));
  PTDP_TEARDOWN_CALL(failures, cudaStreamDestroy(side_));
  log_.write_failures("kernels-fused: tearing down the side stream", failures);
}

void SideStream::waits_for_compute() {
  PTDP_CALL(cudaEventRecord(compute_done_, compute_));
  PTDP_CALL(cudaStreamWaitEvent(side_, compute_done_, 0));
}

void SideStream::compute_waits() {
  PTDP_CALL(cudaEventRecord(side_done_, side_));
  PTDP_CALL(cudaStreamWaitEvent(compute_, side_done_, 0));
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
