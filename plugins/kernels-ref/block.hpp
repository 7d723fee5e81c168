#pragma once
// One pre-LayerNorm transformer block, tensor-parallel as in Megatron:
//   r = x + dropout(proj(attention(qkv(ln1(x)))))      qkv column-, proj row-parallel
//   y = r + dropout(fc2(gelu(fc1(ln2(r)))))            fc1 column-, fc2 row-parallel
// The row-parallel GEMMs produce partial sums that one all-reduce completes (forward); the
// gradients entering the two LayerNorms are completed the same way (backward). The biases of
// the row-parallel GEMMs are whole on every rank and added once, after the all-reduce.
// Under sequence parallelism x, r, y and the LayerNorms, dropouts and residual adds are this
// rank's s/t rows: the LayerNorm outputs are all-gathered before the column-parallel GEMMs and the
// row-parallel GEMMs' partial sums reduce-scattered (ptdp/tensor_parallel_regions.hpp), so the
// gradients of the LayerNorms and of the row-parallel biases are this rank's rows' share.
// Selective recomputation (Partition::recompute_modules) keeps the LayerNorm outputs, GeLU output
// or attention probabilities out of the saved activations and recomputes them in the backward.
#include <memory>
#include <string>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "fp8_linear.hpp"
#include "parameter.hpp"
#include "partition.hpp"
#include "ptdp/saved_slots.hpp"

namespace ptdp::kref {

// What the backward of one microbatch needs, all of it this rank's; s' is the rank's rows of the
// sequence (s/t under sequence parallelism, else s). A module that is recomputed leaves its
// buffers empty in what is saved.
struct BlockActivations {
  BlockActivations() = default;
  explicit BlockActivations(const Partition& p);  // every buffer sized, zeroed

  std::vector<float> x;                        // [s', b, h] block input
  std::vector<float> ln1, ln1_mean, ln1_rstd;  // [s', b, h], [s', b], [s', b]
  std::vector<float> qkv;                      // [s, b, 3 * h/t]
  std::vector<float> probs;                    // [b, heads/t, s, s]
  std::vector<float> attn;                     // [s, b, h/t]
  std::vector<float> residual;                 // [s', b, h] after the attention half
  std::vector<float> ln2, ln2_mean, ln2_rstd;
  std::vector<float> fc1;                      // [s, b, ffn/t] before GeLU
  std::vector<float> gelu;                     // [s, b, ffn/t]
  // Under FP8, the scale each linear layer's input was cast with (the backward casts the saved
  // input again with it), by kFp8BlockLinearNames' order.
  float fp8_input_scale[kFp8BlockLinears] = {1.0f, 1.0f, 1.0f, 1.0f};
};

// What a split backward's backward_weight reads, kept by backward_input: per linear layer (by
// kFp8BlockLinearNames' order) its input and output gradient as the GEMMs read them, per
// LayerNorm its input rows, statistics and output gradient, and the row-parallel biases' output
// gradient on this rank's rows. Copies: backward_input's buffers are reused as it goes.
struct BlockWeightGradientInputs {
  std::vector<float> linear_input[kFp8BlockLinears];
  std::vector<float> linear_output_grad[kFp8BlockLinears];
  Fp8Cast linear_output_grad_fp8[kFp8BlockLinears];  // under FP8, as backward_input cast it
  float fp8_input_scale[kFp8BlockLinears] = {1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<float> ln_input[2], ln_mean[2], ln_rstd[2], ln_output_grad[2];  // ln1, ln2
  std::vector<float> proj_bias_grad_rows, fc2_bias_grad_rows;
};

// How one of the block's four linear layers runs: its index in kFp8BlockLinearNames' order, and
// which of its FP8 operands are split over the tensor-parallel group (the input of a row-parallel
// layer, the output gradient of a column-parallel one; the weights always are).
struct LinearSite {
  int index;
  bool input_sharded;
  bool output_gradient_sharded;
};

class RefBlock final : public TransformerBlock {
 public:
  RefBlock(std::shared_ptr<const Partition> partition, int layer_index);

  std::vector<ParamRef> parameters() override;
  void forward(const MicroBatch& mb, const Tensor& in, Tensor out, bool save) override;
  // backward_input, then backward_weight.
  void backward(const MicroBatch& mb, const Tensor& dout, Tensor din) override;
  void backward_input(const MicroBatch& mb, const Tensor& dout, Tensor din) override;
  void backward_weight(const MicroBatch& mb) override;
  void release(int slot) override;
  void bind_fp8_scaling(Tensor amax, Tensor scale) override;

 private:
  // in · weightᵀ (+ bias), in fp32 or, when the block runs in FP8, on FP8 operands; records the
  // input's scale in `input_scale`.
  void linear_forward_of(const LinearSite& site, float* out, const float* in, const Parameter& weight,
                         const float* bias, int64_t n, int64_t in_dim, int64_t out_dim, const MicroBatch& mb,
                         float& input_scale);
  // din from the output gradient, keeping in `kept` what the weight gradient needs.
  void linear_backward_input_of(const LinearSite& site, float* din, const Parameter& weight, const float* dout,
                                const float* in, float input_scale, int64_t n, int64_t in_dim, int64_t out_dim,
                                const MicroBatch& mb, BlockWeightGradientInputs& kept);
  // The weight's (and bias's, when non-null) gradient from what linear_backward_input_of kept.
  void linear_backward_weight_of(const LinearSite& site, const Parameter& weight, float* dbias, int64_t n,
                                 int64_t in_dim, int64_t out_dim, const BlockWeightGradientInputs& kept) const;
  // The LayerNorm of this rank's rows `x` into `ln` (rounded to the working type, as the GEMM
  // after it reads it), and its statistics.
  void layer_norm_of(std::vector<float>& ln, std::vector<float>& mean, std::vector<float>& rstd,
                     const std::vector<float>& x, const Parameter& weight, const Parameter& bias) const;
  // The half of the forward a backward recomputes for the modules of recompute_modules, filling
  // what the forward left out of `a`.
  void recompute(BlockActivations& a) const;

  std::shared_ptr<const Partition> part_;
  int layer_;
  std::string name_;  // "layers.<i>", for parameter names and messages
  std::shared_ptr<Parameter> ln1_weight_, ln1_bias_, qkv_weight_, qkv_bias_, proj_weight_, proj_bias_;
  std::shared_ptr<Parameter> ln2_weight_, ln2_bias_, fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  SavedSlots<BlockActivations> saved_;
  SavedSlots<BlockWeightGradientInputs> weight_gradient_inputs_;
  bool fp8_ = false;  // the recipe runs this block's GEMMs in FP8
  // The scaling tensors' rows, in the core's memory once bound (bind_fp8_scaling), else in
  // own_fp8_ (amax, then scale, each [kFp8BlockLinears, kFp8Operands]; scales 1).
  std::vector<float> own_fp8_;
  Fp8LinearScaling fp8_linears_[kFp8BlockLinears];
};

}  // namespace ptdp::kref
