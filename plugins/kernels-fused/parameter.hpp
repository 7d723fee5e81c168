#pragma once
// Parameter: one learnable tensor as this rank holds it. Its fp32 master weight, gradient and
// Adam moments share one zeroed arena block until the core places master and gradient in its
// own buffers (the moments are the core's then; where the core says it will place every
// parameter, KernelsBinding::core_places_parameters, the block holds no moments, since the
// core's buffers are allocated while it is held); tensors that a GEMM reads also get an act_t
// working copy, which the backend refreshes after the master changes. Where the core keeps only
// a shard of the master (placed with none), the parameter keeps the fp32 values only if the
// kernels read them, and set_weights writes what it keeps.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arena.hpp"
#include "fp8_update_copy.hpp"
#include "kernel_context.hpp"
#include "ptdp/gpt_parameters.hpp"
#include "ptdp/layer_kernels.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct ParameterSpec {
  std::string name;
  std::vector<int64_t> global_shape;
  int shard_dim = -1;
  int64_t shard_offset = 0;
  std::vector<int64_t> local_shape;
  bool weight_decay = true;
  bool working_copy = false;
  bool fp32_reads = true;  // kernels read the fp32 values (LayerNorm, biases, embedding lookups)
  // A working copy only where the core keeps no master here (the distributed optimizer): an FP8
  // block's GEMM weights are cast from the fp32 master where there is one, and from the working
  // copy, which set_weights refreshes, where there is none.
  bool working_copy_without_master = false;
};

// A parameter of ptdp/gpt_parameters.hpp's table; `working_copy`: an act_t copy that the GEMMs
// read; `fp32_reads`: kernels also read the fp32 values.
inline ParameterSpec spec_of(const GptParameterShape& shape, bool working_copy, bool fp32_reads) {
  return ParameterSpec{shape.name, shape.global, shape.shard_dim, shape.shard_offset, shape.local, shape.decay,
                       working_copy, fp32_reads};
}

class Parameter {
 public:
  // keeps_moments: the block holds Adam moments too (a backend used without the core).
  Parameter(const ParameterSpec& spec, DeviceArena& arena, int device, cudaStream_t stream, bool keeps_moments);

  const ParameterSpec& spec() const { return spec_; }
  int64_t numel() const { return numel_; }
  // The fp32 values the kernels read: the core's master, this parameter's own copy (placed
  // without a master), or null (placed without one, and only the working copy is read).
  float* master() const { return master_; }
  bool placed_without_master() const { return placed_without_master_; }
  float* grad() const { return grad_; }
  float* exp_avg() const { return state_ && keeps_moments_ ? base() + 2 * stride_ : nullptr; }
  float* exp_avg_sq() const { return state_ && keeps_moments_ ? base() + 3 * stride_ : nullptr; }
  act_t* working() const { return static_cast<act_t*>(working_.get()); }
  // Counts the changes of the values (the optimizer step, set_weights, params_updated), so that a
  // copy made from them, as FP8 weights are, is made again only when they changed.
  uint64_t values_version() const { return values_version_; }
  void values_changed() { ++values_version_; }
  // Where the optimizer step also writes an FP8 copy of the values it makes (whole-parameter
  // steps only), or null. The copy's owner sets it and outlives the parameter's optimizer steps.
  Fp8UpdateCopy* fp8_update_copy() const { return fp8_update_copy_; }
  void set_fp8_update_copy(Fp8UpdateCopy* copy) { fp8_update_copy_ = copy; }
  ParamRef ref() const;
  // The master weights (copied on the stream) and the gradient move to the core's memory; this
  // parameter's own block goes back to the arena. A null master: the core keeps none, and the
  // fp32 values move to a block of their own if the kernels read them, and a working copy is made
  // under working_copy_without_master.
  void place(float* master, float* grad, DeviceArena& arena, cudaStream_t stream);

 private:
  float* base() const { return static_cast<float*>(state_.get()); }
  ParameterSpec spec_;
  int device_;
  int64_t numel_;
  int64_t stride_;                 // numel rounded up so that each part starts 256-byte aligned
  bool keeps_moments_;
  std::shared_ptr<void> state_;    // master | grad [| exp_avg | exp_avg_sq], until placed
  float* master_ = nullptr;
  float* grad_ = nullptr;
  bool placed_without_master_ = false;
  std::shared_ptr<void> own_master_;  // the fp32 values, placed without a master and read
  std::shared_ptr<void> working_;  // act_t copy of master, or null
  uint64_t values_version_ = 1;
  Fp8UpdateCopy* fp8_update_copy_ = nullptr;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
