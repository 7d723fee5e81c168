#pragma once
// Fused AdamW over every parameter in one launch (multi-tensor): reads the fp32 gradient, updates
// the fp32 master weight and both moments, and writes the act_t working copy where there is one
// and the FP8 copy where there is one (fp8_update_copy.hpp).
#include <cuda_fp8.h>

#include <cstdint>

#include "kernel_context.hpp"
#include "multi_tensor.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct AdamTensor {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  act_t* working;      // null when nothing reads an act_t copy
  // The E4M3 copy of the new values under *fp8_scale, their amax into *fp8_amax and 1 / *fp8_scale
  // into *fp8_scale_inv (Fp8UpdateCopy); fp8 null when there is none.
  __nv_fp8_storage_t* fp8;
  const float* fp8_scale;
  float* fp8_amax;
  float* fp8_scale_inv;
  int64_t numel;
  float weight_decay;  // 0 where the parameter is not decayed
  // Named, so that the descriptor holds no indeterminate padding bytes: the metadata cache finds
  // a list again by comparing its bytes, and garbage there missed it every step.
  float unused = 0;
};

struct AdamHyper {
  float lr, beta1, beta2, eps, grad_scale;
  float bias_correction1, bias_correction2;  // 1 - beta^step
  // When set, grad_scale is read from the global sum of squares on the device, as
  // ptdp::grad_clip_scale computes it, and a non-finite norm updates nothing.
  const float* grad_sum_squares = nullptr;
  float max_grad_norm = 0.0f;
  // The loss scale the gradients (and grad_sum_squares) carry, divided out before clipping and
  // the update (ptdp::AdamStep::loss_scale).
  float loss_scale = 1.0f;
};

// metadata: a device copy of pack_multi_tensor(std::vector<AdamTensor>) of `tensors` entries,
// `with_fp8` of which have an FP8 copy. A step whose gradient norm is not finite updates nothing
// and still writes the FP8 copies, of the unchanged values under the scales given now.
void adam_step(const void* metadata, size_t chunks_offset, int chunk_count, int tensors, int with_fp8,
               const AdamHyper& hyper, const KernelContext& ctx);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
