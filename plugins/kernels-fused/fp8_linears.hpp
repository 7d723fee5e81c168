#pragma once
// The FP8 side of one transformer block's four linear layers, under the hybrid recipe of
// ptdp/fp8.hpp: the weights' FP8 copies (as stored, for the forward; transposed, for the input
// gradient), cast from the fp32 masters (or, under the distributed optimizer, the working copies)
// and made again only when a weight's values changed, so once per optimizer step and not per
// microbatch; the casts of the layers' inputs and output gradients; and the amax and scale
// tensors the core bound (TransformerBlock::bind_fp8_scaling), or the block's own until it does.
#include <cstdint>

#include "backend.hpp"
#include "fp8_cast.hpp"
#include "fp8_update_copy.hpp"
#include "layer_norm.hpp"
#include "parameter.hpp"
#include "ptdp/fp8.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class Fp8Linears {
 public:
  Fp8Linears(Backend& backend, const Fp8Recipe& recipe);
  ~Fp8Linears();
  Fp8Linears(const Fp8Linears&) = delete;
  Fp8Linears& operator=(const Fp8Linears&) = delete;

  // amax and scale: F32 [kFp8BlockLinears, kFp8Operands] on the backend's device.
  void bind(float* amax, const float* scale);

  // Before a forward: makes the FP8 copies of each weight whose values changed since they
  // were made (weights[k] is linear k's, [out, in]); while training, records the weights' amaxes
  // for this step. Under the delayed recipe, where this rank keeps a weight's whole fp32 master,
  // the optimizer step writes the next stored copy (Fp8UpdateCopy) and this only transposes it.
  void prepare_weights(Parameter* const (&weights)[kFp8BlockLinears], bool training);
  Fp8Matrix weight(int k) const;             // [out, in], E4M3
  Fp8Matrix weight_transposed(int k) const;  // [in, out], E4M3

  // Casts linear k's input x [rows, cols] (E4M3) or output gradient (E5M2) into `out`
  // ([rows, cols]) and `transposed` ([cols, rows], or null), and writes the inverse of the scale
  // to *scale_inv. `sharded`: the tensor is split over the tensor-parallel group (its amax is the
  // group's under tensorwise scaling). While training, the amax is recorded.
  void cast(int k, Fp8Operand operand, const act_t* x, int64_t rows, int64_t cols, bool sharded, bool training,
            fp8* out, fp8* transposed, float* scale_inv);

  // Whether the scales are given before the values are seen (the delayed recipe), so that a cast
  // can be made by the kernel that computes its values.
  bool scales_given() const { return recipe_.scaling == Fp8Scaling::Delayed; }

  // With scales_given(): what LayerNorm writes in place of its act_t output when linear k's
  // input is that output (layer_norm_forward_fp8): E4M3 into `out` and `transposed` (either may
  // be null), cast as `cast` casts it.
  LayerNormFp8Out layer_norm_output(int k, bool training, fp8* out, fp8* transposed, float* scale_inv) const;

  // With scales_given(): linear k's input or output gradient made from the MLP's GeLU
  // (fp8_cast_gelu: FC2's input, or FC1's output gradient with its bias gradient added to
  // *dbias), cast as `cast` casts it.
  void cast_gelu(int k, Fp8Operand operand, const Fp8GeluSource& gelu, int64_t rows, int64_t cols, bool training,
                 float* dbias, fp8* out, fp8* transposed, float* scale_inv);

 private:
  struct WeightCopy {
    DeviceBuffer<fp8> data, transposed;
    // Where data is and what it was made from (update.made_from, the values' version; 0: none
    // yet); under the delayed recipe the optimizer step writes it too (Fp8UpdateCopy).
    Fp8UpdateCopy update;
    uint64_t transposed_from = 0;  // the values' version `transposed` was made from
    Parameter* writer = nullptr;   // the parameter whose optimizer step writes `update`, or null
  };
  float* amax_slot(int k, Fp8Operand operand) const { return amax_ + k * kFp8Operands + int(operand); }
  const float* scale_slot(int k, Fp8Operand operand) const { return scale_ + k * kFp8Operands + int(operand); }
  float* weight_scale_inv(int k) const { return state_.get() + kScaleStride * k; }

  Backend& backend_;
  Fp8Recipe recipe_;
  DeviceBuffer<float> own_;  // amax | scale, each [kFp8BlockLinears, kFp8Operands], until bound
  float* amax_ = nullptr;
  const float* scale_ = nullptr;
  // Per linear, kScaleStride floats apart: the weight's scale inverse, then its amax; then one amax
  // that a tensorwise cast reduces.
  DeviceBuffer<float> state_;
  DeviceBuffer<float> amax_partials_;
  DeviceBuffer<unsigned> amax_counter_;
  Fp8AmaxScratch amax_scratch_;
  WeightCopy weights_[kFp8BlockLinears];
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
