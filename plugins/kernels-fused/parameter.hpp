#pragma once
// Parameter: one learnable tensor as this rank holds it. Its fp32 master weight, gradient and
// Adam moments share one zeroed arena block until the core places master and gradient in its
// own buffers (the moments are the core's then); tensors that a GEMM reads also get a bf16
// working copy, which the backend refreshes after the master changes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arena.hpp"
#include "kernel_context.hpp"
#include "ptdp/gpt_parameters.hpp"
#include "ptdp/layer_kernels.hpp"

namespace ptdp::fused {

struct ParameterSpec {
  std::string name;
  std::vector<int64_t> global_shape;
  int shard_dim = -1;
  int64_t shard_offset = 0;
  std::vector<int64_t> local_shape;
  bool weight_decay = true;
  bool working_copy = false;
};

// A parameter of ptdp/gpt_parameters.hpp's table; `working_copy`: a bf16 copy that the GEMMs read.
inline ParameterSpec spec_of(const GptParameterShape& shape, bool working_copy) {
  return ParameterSpec{shape.name, shape.global, shape.shard_dim, shape.shard_offset, shape.local, shape.decay,
                       working_copy};
}

class Parameter {
 public:
  Parameter(const ParameterSpec& spec, DeviceArena& arena, int device, cudaStream_t stream);

  const ParameterSpec& spec() const { return spec_; }
  int64_t numel() const { return numel_; }
  float* master() const { return master_; }
  float* grad() const { return grad_; }
  float* exp_avg() const { return state_ ? base() + 2 * stride_ : nullptr; }
  float* exp_avg_sq() const { return state_ ? base() + 3 * stride_ : nullptr; }
  bf16* working() const { return static_cast<bf16*>(working_.get()); }
  ParamRef ref() const;
  // The master weights (copied on the stream) and the gradient move to the core's memory; this
  // parameter's own block goes back to the arena.
  void place(float* master, float* grad, cudaStream_t stream);

 private:
  float* base() const { return static_cast<float*>(state_.get()); }
  ParameterSpec spec_;
  int device_;
  int64_t numel_;
  int64_t stride_;                 // numel rounded up so that each part starts 256-byte aligned
  std::shared_ptr<void> state_;    // master | grad | exp_avg | exp_avg_sq, until placed
  float* master_ = nullptr;
  float* grad_ = nullptr;
  std::shared_ptr<void> working_;  // bf16 copy of master, or null
};

}  // namespace ptdp::fused
