#pragma once
// Where a transformer block's backward puts its parameter gradients. The whole backward adds them
// as it goes; a split one (TransformerBlock::backward_input, then backward_weight, as zero-bubble
// schedules run it) leaves every parameter gradient as it was until its weight part. The block's
// backward is written once, against this object, which decides:
//   - a weight-gradient GEMM runs at once, or is kept, as a closure holding the arena blocks it
//     reads, for finish() (an operand in the caller's memory is copied first: the caller may
//     overwrite it once backward_input returns);
//   - the bias and LayerNorm gradients that the input-gradient kernels sum as they go (LayerNorm's
//     backward, bias + GeLU, bias + dropout, column sums) go into the parameters' gradients, or
//     into fp32 partial sums in one zeroed arena block of this object's, which finish() adds to
//     them in one launch.
// What is kept comes from the backend's arena, so the allocator's peak counts it; it goes when
// finish() has run or the object is dropped (TransformerBlock::release).
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "activation_type.hpp"
#include "arena.hpp"
#include "parameter.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// Rows of a GEMM operand and the arena block that holds them; no block for memory that is not
// the block's (the caller's output gradient).
struct HeldRows {
  const act_t* data = nullptr;
  std::shared_ptr<void> block;
};

inline HeldRows held(const DeviceBuffer<act_t>& buffer) { return {buffer.get(), buffer.block}; }

class ParameterGradientWork {
 public:
  // The whole backward's: gradients at once. accumulate: whether the weight-gradient GEMMs add to
  // their gradients (false where they write them, on the step's first backward).
  static ParameterGradientWork immediate(bool accumulate);
  // backward_input's: the GEMMs are kept, and the gradients of `summed` (the parameters whose
  // gradients kernels sum) go to partial sums, zeroed on `stream`.
  static ParameterGradientWork deferred(const std::vector<Parameter*>& summed, DeviceArena& arena, cudaStream_t stream);

  // Where a kernel adds p's gradient: p's own, or its partial sum.
  float* sum(Parameter& p);
  // `count` elements of `rows`, readable until the GEMM that reads them runs: as they are when it
  // runs at once; else their block held, or a copy of them in a block of the arena.
  HeldRows hold(const HeldRows& rows, int64_t count);
  // A weight-gradient GEMM; it captures what it reads (hold) by value.
  using WeightGemm = std::function<void(bool accumulate)>;
  void weight_gemm(WeightGemm gemm);
  // Deferred work: runs the kept GEMMs, then adds the partial sums to the gradients (after the
  // GEMMs, as a bias gradient a GEMM's epilogue writes is then final), and frees what was kept.
  void finish(bool accumulate);

 private:
  ParameterGradientWork() = default;

  bool deferred_ = false;
  bool accumulate_ = true;  // immediate only
  DeviceArena* arena_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<WeightGemm> gemms_;
  DeviceBuffer<float> partials_;
  std::vector<std::pair<Parameter*, float*>> sums_;  // each summed parameter's partial sum
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
