#pragma once
// One pre-LayerNorm transformer block, tensor-parallel over the backend's group (Megatron):
//   h   = x + dropout(proj(attention(qkv(ln1(x)))) + proj.bias)      (site 1 + 2i)
//   out = h + dropout(fc2(gelu(fc1(ln2(h)))) + fc2.bias)              (site 2 + 2i)
// QKV and FC1 are column-parallel (this rank's heads and FFN columns), the projection and FC2
// row-parallel; their partial outputs are summed over the group before the bias. Backward sums
// the gradients of ln1(x) and ln2(h) over the group (the conjugate all-reduces). The backward
// also runs split, as zero-bubble schedules ask (backward_input, later backward_weight): the same
// code, its parameter-gradient work kept for later (parameter_gradient_work.hpp).
#include <memory>
#include <vector>

#include "backend.hpp"
#include "dropout.hpp"
#include "fp8_linears.hpp"
#include "parameter_gradient_work.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class FusedTransformerBlock final : public TransformerBlock {
 public:
  FusedTransformerBlock(std::shared_ptr<Backend> backend, int layer_index);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& in, Tensor out, bool save) override;
  void backward(const MicroBatch& mb, const Tensor& dout, Tensor din) override;
  void backward_input(const MicroBatch& mb, const Tensor& dout, Tensor din) override;
  void backward_weight(const MicroBatch& mb) override;
  void release(int slot) override;
  void bind_fp8_scaling(Tensor amax, Tensor scale) override;

 private:
  struct Activations;
  // The gradient of a row-parallel GEMM's output, from that of out = residual + dropout(y + bias),
  // and where the bias gradient is still to be summed: by the weight-gradient GEMM's epilogue
  // (gemm_sums_bias, the bias), or by the LayerNorm backward that reads dout as its residual
  // gradient (layer_norm_sum, where it adds them); both null when it is summed already.
  struct BranchGradient {
    HeldRows grad;
    Parameter* gemm_sums_bias;
    float* layer_norm_sum;
  };
  // Readies the parameters' gradients for the work that adds to them (the whole backward, or
  // backward_weight); returns whether the weight-gradient GEMMs add to theirs (false on the
  // step's first backward, MicroBatch::first_gradient, when they write them).
  bool start_gradients(const MicroBatch& mb);
  // The parameters whose gradients kernels sum into (the biases and LayerNorms), not GEMMs.
  std::vector<Parameter*> summed_parameters() const;
  BranchGradient branch_backward(const HeldRows& dout, Parameter& bias, const DropoutSite& dropout,
                                 ParameterGradientWork& work);
  // y[tokens, out] = x[tokens, in] · weightᵀ, then the epilogue (none, a bias, or bias + GeLU
  // with the GeLU's input into its aux matrix), linear k of kFp8BlockLinearNames' order: in
  // act_t, or on FP8 operands when the block runs in FP8 (then, with `save`, the input's FP8
  // transpose and scale are kept there for the weight gradient).
  void linear_forward(int k, const act_t* x, bool x_sharded, Parameter& weight, const GemmEpilogue& epilogue, act_t* y,
                      int64_t in, int64_t out, const MicroBatch& mb, Activations& a, bool save);
  // linear_forward's FP8 GEMM, on linear k's input already cast (x8; its scale in `a`).
  void fp8_forward_gemm(int k, const fp8* x8, const Activations& a, const GemmEpilogue& epilogue, act_t* y, int64_t in,
                        int64_t out);
  // Under FP8: the input gradient dx[tokens, in] = dy · weight (when dx is not null) and, through
  // `work`, the weight gradient from dy and the saved input, on FP8 operands.
  void fp8_linear_backward(int k, const act_t* dy, bool dy_sharded, Parameter& weight, act_t* dx, int64_t in,
                           int64_t out, const Activations& a, ParameterGradientWork& work);
  // An output gradient [tokens, out] in E5M2: as it is (for the input gradient) and transposed
  // (for the weight gradient), with the inverse of its scale.
  struct Fp8Gradient {
    DeviceBuffer<fp8> data, transposed;
    DeviceBuffer<float> scale_inv;
  };
  Fp8Gradient allocate_fp8_gradient(int64_t out);
  // fp8_linear_backward's GEMMs, on an output gradient already cast.
  void fp8_linear_gemms(int k, const Fp8Gradient& dy, Parameter& weight, act_t* dx, int64_t in, int64_t out,
                        const Activations& a, ParameterGradientWork& work);
  // Whether cuBLASLt takes FC1's forward with its bias + GeLU epilogue on FP8 operands, for this
  // block's shapes.
  bool fp8_gelu_epilogue_offered();
  // The backward of backward() and backward_input(): din from the saved forward, and the parameter
  // gradients through `work` (split: kept for backward_weight).
  ParameterGradientWork run_backward(const MicroBatch& mb, const Tensor& dout, Tensor din, bool split);
  // Its GEMMs in act_t, or (a block that runs in FP8) on FP8 operands.
  void backward_act_t(const MicroBatch& mb, const act_t* dy, act_t* din, Activations& a, ParameterGradientWork& work);
  void backward_fp8(const MicroBatch& mb, const act_t* dy, act_t* din, Activations& a, ParameterGradientWork& work);
  // LayerNorm `ln`'s (1 or 2) backward after the column-parallel GEMM it feeds: d_ln, that GEMM's
  // input gradient (this rank's partial sums), summed over the group to this rank's rows, then
  // dx = residual_grad + LayerNorm'(it), with its parameters' gradients (and, where
  // layer_norm_sum is given, the row-parallel bias's) through `work`.
  void layer_norm_input_gradient(int ln, act_t* d_ln, const act_t* residual_grad, act_t* dx, const Activations& a,
                                 float* layer_norm_sum, ParameterGradientWork& work);
  // Before a backward: what selective recomputation did not keep (Backend::recomputes), made
  // again from what was kept.
  void recompute_saved(Activations& a);

  std::shared_ptr<Backend> backend_;
  int layer_;
  int64_t width_ = 0;  // this rank's attention width (heads / t * head_dim)
  int64_t ffn_ = 0;    // this rank's FFN columns
  bool gelu_epilogue_ = false;  // the option, where this rank's FFN width allows it
  std::shared_ptr<Parameter> ln1_weight_, ln1_bias_, qkv_weight_, qkv_bias_, proj_weight_, proj_bias_;
  std::shared_ptr<Parameter> ln2_weight_, ln2_bias_, fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  SavedSlots<std::shared_ptr<Activations>> saved_;
  SavedSlots<ParameterGradientWork> weight_work_;  // what backward_input kept for backward_weight
  std::unique_ptr<Fp8Linears> fp8_;  // when the recipe runs this block in FP8
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
