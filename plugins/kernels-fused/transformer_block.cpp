#include "transformer_block.hpp"

#include <string>
#include <vector>

#include "bias_dropout_add.hpp"
#include "bias_gelu.hpp"
#include "column_reduce.hpp"
#include "layer_norm.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "residual_layer_norm.hpp"
#include "zero_fill.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

// What backward reads, per microbatch in flight. Dropout masks are redrawn, not kept.
struct FusedTransformerBlock::Activations {
  DeviceBuffer<act_t> x;          // block input          [tokens, h]
  DeviceBuffer<act_t> ln1;        // ln1(x)               [tokens, h]
  DeviceBuffer<float> ln1_stats;  // mean | rstd         [2, tokens]
  DeviceBuffer<act_t> qkv;        // with bias            [tokens, 3, width]
  DeviceBuffer<act_t> ctx;        // attention output     [tokens, width]
  std::shared_ptr<void> attention;
  DeviceBuffer<act_t> h;          // after attention      [tokens, h]
  DeviceBuffer<act_t> ln2;        // ln2(h)               [tokens, h]
  DeviceBuffer<float> ln2_stats;  // mean | rstd         [2, tokens]
  DeviceBuffer<act_t> fc1;        // FC1 output: before its bias, or with it under gelu_epilogue [tokens, ffn]
  DeviceBuffer<act_t> act;        // gelu(fc1 + bias)     [tokens, ffn]
  // Under FP8: each linear layer's input cast to E4M3 and transposed ([in, tokens]), which its
  // weight gradient reads in place of ln1, ctx, ln2 and act, and the inverse of its scale.
  DeviceBuffer<fp8> input_t[kFp8BlockLinears];
  DeviceBuffer<float> input_scale_inv;  // [kFp8BlockLinears], kScaleStride apart
};

namespace {

// The block's linear layers, in kFp8BlockLinearNames' order.
constexpr int kQkv = 0, kProj = 1, kFc1 = 2, kFc2 = 3;

// A GEMM operand from a tensor-parallel region: the rows `gathered` holds where the region
// gathered them (under sequence parallelism), else the rank's own.
HeldRows gathered_or(const act_t* rows, const DeviceBuffer<act_t>& gathered, const HeldRows& own) {
  return gathered ? HeldRows{rows, gathered.block} : own;
}

GemmEpilogue bias_epilogue(const act_t* bias) {
  GemmEpilogue e;
  e.kind = GemmEpilogue::Kind::Bias;
  e.bias = bias;
  return e;
}

}  // namespace

FusedTransformerBlock::FusedTransformerBlock(std::shared_ptr<Backend> backend, int layer_index)
    : backend_(std::move(backend)),
      layer_(layer_index),
      saved_("kernels-fused: block " + std::to_string(layer_index)),
      weight_work_("kernels-fused: block " + std::to_string(layer_index) + " (weight gradients)") {
  const ModelSpec& m = backend_->model();
  const int t = backend_->tp_size(), r = backend_->tp_rank();
  const int64_t h = m.hidden;
  width_ = h / t;
  ffn_ = m.ffn_hidden / t;
  // A bf16 working copy for the GeLU epilogue, which reads its bias in bf16 (as QKV's).
  gelu_epilogue_ = backend_->options().gelu_epilogue && Gemm::gelu_epilogue_fits(ffn_);
  if (backend_->fp8().block_in_fp8(layer_, m.layers)) {
    fp8_ = std::make_unique<Fp8Linears>(*backend_, backend_->fp8());
    // Bias + GeLU stay in FC1's epilogue where cuBLASLt takes it with FP8 operands; else the
    // bias + GeLU kernel does that work. The backward's dGeLU is the kernel's either way: FP8
    // with the DGELU epilogue ran on the H200 as the GEMM plus a separate 0.58 ms epilogue kernel
    // per layer (14 ms a step of the 1.3B model), against 0.12 ms for the kernel.
    // Under the delayed recipe the casts compute the GeLU instead (fp8_cast_gelu): FC2's input
    // and FC1's output gradient are then never stored in act_t.
    if (fp8_->scales_given()) gelu_epilogue_ = false;
    if (gelu_epilogue_) gelu_epilogue_ = fp8_gelu_epilogue_offered();
  }
  std::shared_ptr<Parameter>* const in_table_order[] = {&ln1_weight_, &ln1_bias_, &qkv_weight_, &qkv_bias_,
                                                      &proj_weight_, &proj_bias_, &ln2_weight_, &ln2_bias_,
                                                      &fc1_weight_, &fc1_bias_, &fc2_weight_, &fc2_bias_};
  // Which parameters the GEMMs read in act_t (a bias the epilogue adds, too), and which other
  // kernels read in fp32 (LayerNorm, bias + GeLU, bias + dropout + add). In an FP8 block the four
  // weights are read as FP8 copies cast from their fp32 masters: no working copy, except under
  // the distributed optimizer, where this rank keeps no master.
  const bool gemm_weight[] = {false, false, true, false, true, false, false, false, true, false, true, false};
  const bool working[] = {false, false, true, true, true, false, false, false, true, gelu_epilogue_, true, false};
  const bool fp32[] = {true, true, false, false, false, true, true, true, false, true, false, true};
  const auto table = gpt_block_parameters(layer_, h, m.ffn_hidden, t, r);
  for (size_t i = 0; i < table.size(); ++i) {
    ParameterSpec spec = spec_of(table[i], working[i], fp32[i]);
    if (fp8_ && gemm_weight[i]) spec.working_copy = false, spec.working_copy_without_master = true;
    *in_table_order[i] = backend_->make_parameter(spec);
  }
}

std::vector<ParamRef> FusedTransformerBlock::parameters() {
  return {ln1_weight_->ref(), ln1_bias_->ref(), qkv_weight_->ref(), qkv_bias_->ref(),
          proj_weight_->ref(), proj_bias_->ref(), ln2_weight_->ref(), ln2_bias_->ref(),
          fc1_weight_->ref(), fc1_bias_->ref(), fc2_weight_->ref(), fc2_bias_->ref()};
}

void FusedTransformerBlock::forward(const MicroBatch& mb, const Tensor& in, Tensor out, bool save) {
  const ModelSpec& m = backend_->model();
  const std::string where = "block " + std::to_string(layer_) + " forward: ";
  TensorParallelRows& rows = backend_->rows();
  backend_->expect(in, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden}, where + "in");
  backend_->expect(out, kActDType, MemoryKind::Cuda, {rows.local_seq(), m.micro_batch, m.hidden}, where + "out");
  if (save) saved_.require_free(mb.slot);
  backend_->activate();
  backend_->note_layer_forward();
  const KernelContext& k = backend_->kernel_context();
  DeviceArena& arena = backend_->arena();
  // The GEMMs and attention work on all `tokens` rows; LayerNorm, dropout and the residual adds on
  // this rank's `local` rows (all of them unless under sequence parallelism).
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;

  auto a = std::make_shared<Activations>();
  // Backward needs the input, which the caller may overwrite once this returns: LayerNorm keeps a
  // copy as it reads it. Until `out` is written, the block reads `in` itself.
  const act_t* x = in.as<const act_t>();
  const bool gelu_in_fp8_cast = fp8_ && fp8_->scales_given();
  // Likewise each LayerNorm writes the FP8 input of the GEMM it feeds (layer_norm_fp8.cuh), where
  // no sequence-parallel gather comes between them: its act_t output is never stored.
  const bool layer_norm_in_fp8 = gelu_in_fp8_cast && !rows.sequence_parallel() && layer_norm_fp8_fits(local, h);
  if (save) a->x = allocate_buffer<act_t>(arena, size_t(local * h));
  if (!layer_norm_in_fp8) a->ln1 = allocate_buffer<act_t>(arena, size_t(local * h));
  a->ln1_stats = allocate_buffer<float>(arena, size_t(2 * local));
  a->qkv = allocate_buffer<act_t>(arena, size_t(tokens * 3 * width_));
  a->ctx = allocate_buffer<act_t>(arena, size_t(tokens * width_));
  a->h = allocate_buffer<act_t>(arena, size_t(local * h));
  if (!layer_norm_in_fp8) a->ln2 = allocate_buffer<act_t>(arena, size_t(local * h));
  a->ln2_stats = allocate_buffer<float>(arena, size_t(2 * local));
  a->fc1 = allocate_buffer<act_t>(arena, size_t(tokens * ffn_));
  if (!gelu_in_fp8_cast) a->act = allocate_buffer<act_t>(arena, size_t(tokens * ffn_));
  auto partial = allocate_buffer<act_t>(arena, size_t(tokens * h));  // row-parallel GEMM outputs
  DeviceBuffer<act_t> gathered, summed;  // under sequence parallelism: a GEMM's input, a sum's rows
  if (fp8_) {
    a->input_scale_inv = allocate_buffer<float>(arena, size_t(kScaleStride) * kFp8BlockLinears);
    Parameter* const weights[kFp8BlockLinears] = {qkv_weight_.get(), proj_weight_.get(), fc1_weight_.get(),
                                                  fc2_weight_.get()};
    fp8_->prepare_weights(weights, mb.training);
  }

  // A LayerNorm's FP8 output for linear k: as stored for the GEMM, transposed where kept.
  const auto layer_norm_fp8_output = [&](int linear, DeviceBuffer<fp8>& x8) {
    x8 = allocate_buffer<fp8>(arena, size_t(tokens * h));
    if (save) a->input_t[linear] = allocate_buffer<fp8>(arena, size_t(tokens * h));
    return fp8_->layer_norm_output(linear, mb.training, x8.get(), a->input_t[linear].get(),
                                   a->input_scale_inv.get() + kScaleStride * linear);
  };
  DeviceBuffer<fp8> ln_x8;

  // Attention half.
  if (layer_norm_in_fp8) {
    layer_norm_forward_fp8(x, ln1_weight_->master(), ln1_bias_->master(), layer_norm_fp8_output(kQkv, ln_x8),
                           a->ln1_stats.get(), a->ln1_stats.get() + local, local, h, m.layernorm_eps, k,
                           save ? a->x.get() : nullptr);
    fp8_forward_gemm(kQkv, ln_x8.get(), *a, bias_epilogue(qkv_bias_->working()), a->qkv.get(), h, 3 * width_);
  } else {
    layer_norm_forward(x, ln1_weight_->master(), ln1_bias_->master(), a->ln1.get(), a->ln1_stats.get(),
                       a->ln1_stats.get() + local, local, h, m.layernorm_eps, k, save ? a->x.get() : nullptr);
    linear_forward(kQkv, rows.column_parallel_input(a->ln1.get(), gathered, h), false, *qkv_weight_,
                   bias_epilogue(qkv_bias_->working()), a->qkv.get(), h, 3 * width_, mb, *a, save);
  }
  gathered = {};
  a->attention = backend_->attention().forward(a->qkv.get(), a->ctx.get(), save);
  linear_forward(kProj, a->ctx.get(), true, *proj_weight_, {}, partial.get(), width_, h, mb, *a, save);
  const act_t* attention_out = rows.row_parallel_output(partial.get(), summed, h);
  const DropoutSite attention_dropout = backend_->dropout_site(mb, 1 + 2 * layer_);
  if (layer_norm_in_fp8) {
    const LayerNormFp8Out ln2_out = layer_norm_fp8_output(kFc1, ln_x8);
    if (backend_->options().fused_residual_layer_norm) {
      bias_dropout_add_layer_norm_forward_fp8(attention_out, proj_bias_->master(), x, a->h.get(), ln2_weight_->master(),
                                              ln2_bias_->master(), ln2_out, a->ln2_stats.get(),
                                              a->ln2_stats.get() + local, local, h, m.layernorm_eps, attention_dropout, k);
    } else {
      bias_dropout_add_forward(attention_out, proj_bias_->master(), x, a->h.get(), local, h, attention_dropout, k);
      layer_norm_forward_fp8(a->h.get(), ln2_weight_->master(), ln2_bias_->master(), ln2_out, a->ln2_stats.get(),
                             a->ln2_stats.get() + local, local, h, m.layernorm_eps, k);
    }
  } else if (backend_->options().fused_residual_layer_norm) {
    // The MLP half's LayerNorm too, in the same kernel.
    bias_dropout_add_layer_norm_forward(attention_out, proj_bias_->master(), x, a->h.get(), ln2_weight_->master(),
                                        ln2_bias_->master(), a->ln2.get(), a->ln2_stats.get(),
                                        a->ln2_stats.get() + local, local, h, m.layernorm_eps, attention_dropout, k);
  } else {
    bias_dropout_add_forward(attention_out, proj_bias_->master(), x, a->h.get(), local, h, attention_dropout, k);
    layer_norm_forward(a->h.get(), ln2_weight_->master(), ln2_bias_->master(), a->ln2.get(), a->ln2_stats.get(),
                       a->ln2_stats.get() + local, local, h, m.layernorm_eps, k);
  }
  summed = {};
  const act_t* fc1_in = layer_norm_in_fp8 ? nullptr : rows.column_parallel_input(a->ln2.get(), gathered, h);

  // MLP half. `out` is written last, so it may be the same memory as `in`.
  if (gelu_in_fp8_cast) {
    if (layer_norm_in_fp8) fp8_forward_gemm(kFc1, ln_x8.get(), *a, {}, a->fc1.get(), h, ffn_);
    else linear_forward(kFc1, fc1_in, false, *fc1_weight_, {}, a->fc1.get(), h, ffn_, mb, *a, save);
    ln_x8 = {};
    auto x8 = allocate_buffer<fp8>(arena, size_t(tokens * ffn_));
    if (save) a->input_t[kFc2] = allocate_buffer<fp8>(arena, size_t(tokens * ffn_));
    fp8_->cast_gelu(kFc2, Fp8Operand::Input, Fp8GeluSource{a->fc1.get(), fc1_bias_->master(), nullptr}, tokens, ffn_,
                    mb.training, nullptr, x8.get(), a->input_t[kFc2].get(), a->input_scale_inv.get() + kScaleStride * kFc2);
    fp8_forward_gemm(kFc2, x8.get(), *a, {}, partial.get(), ffn_, h);
  } else if (gelu_epilogue_) {
    // The GeLU input is written even when nothing is saved: one epilogue for both, so a
    // recomputed forward gives the bits of the saved one.
    GemmEpilogue gelu;
    gelu.kind = GemmEpilogue::Kind::GeluAuxBias;
    gelu.bias = fc1_bias_->working();
    gelu.aux = a->fc1.get();
    linear_forward(kFc1, fc1_in, false, *fc1_weight_, gelu, a->act.get(), h, ffn_, mb, *a, save);
  } else {
    linear_forward(kFc1, fc1_in, false, *fc1_weight_, {}, a->fc1.get(), h, ffn_, mb, *a, save);
    bias_gelu_forward(a->fc1.get(), fc1_bias_->master(), a->act.get(), tokens, ffn_, k);
  }
  gathered = {};
  if (!gelu_in_fp8_cast) linear_forward(kFc2, a->act.get(), true, *fc2_weight_, {}, partial.get(), ffn_, h, mb, *a, save);
  bias_dropout_add_forward(rows.row_parallel_output(partial.get(), summed, h), fc2_bias_->master(), a->h.get(),
                           out.as<act_t>(), local, h, backend_->dropout_site(mb, 2 + 2 * layer_), k);

  if (fp8_) a->ln1 = a->ln2 = a->act = {};  // the weight gradients read the FP8 transposes instead
  if (save) {
    // Selective recomputation: what the backward recomputes (recompute_saved) is not kept.
    // An FP8 block keeps its GEMM inputs only as the FP8 transposes the weight gradients read.
    if (backend_->recomputes(RecomputeModule::LayerNorm)) {
      a->ln1 = a->ln2 = {};
      a->input_t[kQkv] = a->input_t[kFc1] = {};
    }
    if (backend_->recomputes(RecomputeModule::MlpActivation)) {
      a->act = {};
      a->input_t[kFc2] = {};
    }
    // The attention's output stays: it is the projection's input, which Megatron keeps too.
    if (backend_->recomputes(RecomputeModule::CoreAttention)) a->attention = {};
    saved_.put(mb.slot, std::move(a));
  }
}

void FusedTransformerBlock::recompute_saved(Activations& a) {
  const ModelSpec& m = backend_->model();
  const KernelContext& k = backend_->kernel_context();
  DeviceArena& arena = backend_->arena();
  const int64_t tokens = backend_->rows().tokens(), local = backend_->rows().local_tokens(), h = m.hidden;
  // The same kernels on the same kept inputs give the same bits, except that under the GeLU
  // epilogue the GeLU is the kernel's here and cuBLASLt's in the forward (both the tanh form). In
  // an FP8 block what is made again is the FP8 transpose its weight gradient reads, cast under the
  // scale the forward used (the same amax, or the same given scale) without recording an amax.
  const auto fp8_transpose = [&](int linear, const act_t* x, int64_t width, bool sharded) {
    a.input_t[linear] = allocate_buffer<fp8>(arena, size_t(tokens * width));
    fp8_->cast(linear, Fp8Operand::Input, x, tokens, width, sharded, false, nullptr, a.input_t[linear].get(),
               a.input_scale_inv.get() + kScaleStride * linear);
  };
  if (backend_->recomputes(RecomputeModule::LayerNorm)) {
    a.ln1 = allocate_buffer<act_t>(arena, size_t(local * h));
    a.ln2 = allocate_buffer<act_t>(arena, size_t(local * h));
    layer_norm_forward(a.x.get(), ln1_weight_->master(), ln1_bias_->master(), a.ln1.get(), nullptr, nullptr, local, h,
                       m.layernorm_eps, k);
    layer_norm_forward(a.h.get(), ln2_weight_->master(), ln2_bias_->master(), a.ln2.get(), nullptr, nullptr, local, h,
                       m.layernorm_eps, k);
    if (fp8_) {
      DeviceBuffer<act_t> gathered;
      fp8_transpose(kQkv, backend_->rows().column_parallel_input(a.ln1.get(), gathered, h), h, false);
      fp8_transpose(kFc1, backend_->rows().column_parallel_input(a.ln2.get(), gathered, h), h, false);
      a.ln1 = a.ln2 = {};
    }
  }
  if (backend_->recomputes(RecomputeModule::MlpActivation)) {
    const float* bias = gelu_epilogue_ ? nullptr : fc1_bias_->master();
    if (fp8_ && fp8_->scales_given()) {
      a.input_t[kFc2] = allocate_buffer<fp8>(arena, size_t(tokens * ffn_));
      fp8_->cast_gelu(kFc2, Fp8Operand::Input, Fp8GeluSource{a.fc1.get(), bias, nullptr}, tokens, ffn_, false, nullptr,
                      nullptr, a.input_t[kFc2].get(), a.input_scale_inv.get() + kScaleStride * kFc2);
    } else {
      a.act = allocate_buffer<act_t>(arena, size_t(tokens * ffn_));
      bias_gelu_forward(a.fc1.get(), bias, a.act.get(), tokens, ffn_, k);
      if (fp8_) {
        fp8_transpose(kFc2, a.act.get(), ffn_, true);
        a.act = {};
      }
    }
  }
  // The forward again, for its state; it writes the kept output's bits again.
  if (backend_->recomputes(RecomputeModule::CoreAttention))
    a.attention = backend_->attention().forward(a.qkv.get(), a.ctx.get(), true);
}

void FusedTransformerBlock::linear_forward(int k, const act_t* x, bool x_sharded, Parameter& weight,
                                           const GemmEpilogue& epilogue, act_t* y, int64_t in, int64_t out,
                                           const MicroBatch& mb, Activations& a, bool save) {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  Gemm& gemm = backend_->gemm();
  if (!fp8_ && epilogue.kind == GemmEpilogue::Kind::GeluAuxBias)
    return gemm.linear_forward_gelu(x, weight.working(), epilogue.bias, y, epilogue.aux, tokens, in, out);
  if (!fp8_) return gemm.linear_forward(x, weight.working(), epilogue.bias, y, tokens, in, out);
  auto x8 = allocate_buffer<fp8>(backend_->arena(), size_t(tokens * in));
  if (save) a.input_t[k] = allocate_buffer<fp8>(backend_->arena(), size_t(tokens * in));
  fp8_->cast(k, Fp8Operand::Input, x, tokens, in, x_sharded, mb.training, x8.get(), a.input_t[k].get(),
             a.input_scale_inv.get() + kScaleStride * k);
  fp8_forward_gemm(k, x8.get(), a, epilogue, y, in, out);
}

void FusedTransformerBlock::fp8_forward_gemm(int k, const fp8* x8, const Activations& a, const GemmEpilogue& epilogue,
                                             act_t* y, int64_t in, int64_t out) {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  backend_->gemm().fp8_nt(Fp8Matrix{x8, false, a.input_scale_inv.get() + kScaleStride * k}, fp8_->weight(k), tokens, out,
                          in, y, kActCudaType, 0.0f, epilogue, backend_->options().fp8_forward_fast_accumulation);
}

FusedTransformerBlock::Fp8Gradient FusedTransformerBlock::allocate_fp8_gradient(int64_t out) {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  DeviceArena& arena = backend_->arena();
  return Fp8Gradient{allocate_buffer<fp8>(arena, size_t(tokens * out)), allocate_buffer<fp8>(arena, size_t(tokens * out)),
                     allocate_buffer<float>(arena, 1)};
}

void FusedTransformerBlock::fp8_linear_backward(int k, const act_t* dy, bool dy_sharded, Parameter& weight, act_t* dx,
                                                int64_t in, int64_t out, const Activations& a,
                                                ParameterGradientWork& work) {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  const Fp8Gradient dy8 = allocate_fp8_gradient(out);
  fp8_->cast(k, Fp8Operand::OutputGradient, dy, tokens, out, dy_sharded, true, dx ? dy8.data.get() : nullptr,
             dy8.transposed.get(), dy8.scale_inv.get());
  fp8_linear_gemms(k, dy8, weight, dx, in, out, a, work);
}

void FusedTransformerBlock::fp8_linear_gemms(int k, const Fp8Gradient& dy, Parameter& weight, act_t* dx, int64_t in,
                                             int64_t out, const Activations& a, ParameterGradientWork& work) {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  const bool fast = backend_->options().fp8_gradient_fast_accumulation;
  Gemm* gemm = &backend_->gemm();
  if (dx)
    gemm->fp8_nt(Fp8Matrix{dy.data.get(), true, dy.scale_inv.get()}, fp8_->weight_transposed(k), tokens, in, out, dx,
                 kActCudaType, 0.0f, {}, fast);
  // The weight gradient reads the gradient's and the input's FP8 transposes with their scales: the
  // closure holds those blocks (not the gradient as stored, which only the input gradient reads).
  Parameter* w = &weight;
  work.weight_gemm([gemm, w, k, in, out, tokens, fast, dy_t = dy.transposed, dy_scale = dy.scale_inv,
                    x_t = a.input_t[k], x_scale = a.input_scale_inv](bool accumulate) {
    gemm->fp8_nt(Fp8Matrix{dy_t.get(), true, dy_scale.get()},
                 Fp8Matrix{x_t.get(), false, x_scale.get() + kScaleStride * k}, out, in, tokens, w->grad(), CUDA_R_32F,
                 accumulate ? 1.0f : 0.0f, {}, fast);
  });
}

void FusedTransformerBlock::backward(const MicroBatch& mb, const Tensor& dout, Tensor din) {
  run_backward(mb, dout, din, false);
}

void FusedTransformerBlock::backward_input(const MicroBatch& mb, const Tensor& dout, Tensor din) {
  weight_work_.require_free(mb.slot);
  weight_work_.put(mb.slot, run_backward(mb, dout, din, true));
}

void FusedTransformerBlock::backward_weight(const MicroBatch& mb) {
  ParameterGradientWork work = weight_work_.take(mb.slot);
  backend_->activate();
  work.finish(start_gradients(mb));
}

ParameterGradientWork FusedTransformerBlock::run_backward(const MicroBatch& mb, const Tensor& dout, Tensor din,
                                                          bool split) {
  const ModelSpec& m = backend_->model();
  const std::string where = "block " + std::to_string(layer_) + (split ? " backward_input: " : " backward: ");
  const int64_t seq = backend_->rows().local_seq();
  backend_->expect(dout, kActDType, MemoryKind::Cuda, {seq, m.micro_batch, m.hidden}, where + "dout");
  backend_->expect(din, kActDType, MemoryKind::Cuda, {seq, m.micro_batch, m.hidden}, where + "din");
  std::shared_ptr<Activations> a = saved_.take(mb.slot);
  backend_->activate();
  recompute_saved(*a);
  // Split, the parameter gradients stay as they are until backward_weight, which readies them.
  ParameterGradientWork work =
      split ? ParameterGradientWork::deferred(summed_parameters(), backend_->arena(), backend_->stream())
            : ParameterGradientWork::immediate(start_gradients(mb));
  if (fp8_)
    backward_fp8(mb, dout.as<const act_t>(), din.as<act_t>(), *a, work);
  else
    backward_act_t(mb, dout.as<const act_t>(), din.as<act_t>(), *a, work);
  return work;
}

void FusedTransformerBlock::backward_act_t(const MicroBatch& mb, const act_t* dy, act_t* din, Activations& a,
                                           ParameterGradientWork& work) {
  const ModelSpec& m = backend_->model();
  const KernelContext& k = backend_->kernel_context();
  DeviceArena& arena = backend_->arena();
  Gemm& gemm = backend_->gemm();
  TensorParallelRows& rows = backend_->rows();
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;
  const bool bias_grad_epilogue = backend_->options().bias_grad_epilogue;

  // A weight-gradient GEMM (with its bias's gradient in the epilogue where `bias` is given), now or
  // in backward_weight: the closure holds what it reads. Gradients are looked up when it runs.
  auto weight_gradient = [&](const HeldRows& d_out, const HeldRows& x, Parameter& weight, int64_t in, int64_t out,
                             Parameter* bias = nullptr) {
    Gemm* g = &gemm;
    Parameter* w = &weight;
    work.weight_gemm([g, w, bias, in, out, tokens, dy_rows = work.hold(d_out, tokens * out),
                      x_rows = work.hold(x, tokens * in)](bool accumulate) {
      g->linear_backward_weight(dy_rows.data, x_rows.data, w->grad(), tokens, in, out, bias ? bias->grad() : nullptr,
                                1.0f, accumulate);
    });
  };

  // Gradients of this rank's rows (all rows unless under sequence parallelism): of a LayerNorm
  // output, of the attention half's output. `whole` holds a row-parallel output's gradient
  // gathered to all rows, `input` a LayerNorm output gathered again for a weight gradient.
  auto d_h = allocate_buffer<act_t>(arena, size_t(local * h));
  auto d_ln = allocate_buffer<act_t>(arena, size_t(tokens * h));  // a column-parallel GEMM's input gradient
  DeviceBuffer<act_t> whole, input;

  {  // MLP half: out = h + dropout(fc2(act) + b2).
    auto d_ffn = allocate_buffer<act_t>(arena, size_t(tokens * ffn_));
    const BranchGradient mlp =
        branch_backward(HeldRows{dy, nullptr}, *fc2_bias_, backend_->dropout_site(mb, 2 + 2 * layer_), work);
    const act_t* mlp_grad = rows.row_parallel_output_grad(mlp.grad.data, whole, h);
    weight_gradient(gathered_or(mlp_grad, whole, mlp.grad), held(a.act), *fc2_weight_, ffn_, h, mlp.gemm_sums_bias);
    const act_t* ln2 = rows.column_parallel_input(a.ln2.get(), input, h);
    const HeldRows ln2_rows = gathered_or(ln2, input, held(a.ln2));
    if (gelu_epilogue_) {
      // FC1's bias gradient is the column sums of d_ffn: FC1's weight-gradient GEMM sums them in
      // its epilogue, or a column-sum kernel does.
      gemm.linear_backward_input_dgelu(mlp_grad, fc2_weight_->working(), a.fc1.get(), d_ffn.get(), tokens, ffn_, h);
      if (bias_grad_epilogue) {
        weight_gradient(held(d_ffn), ln2_rows, *fc1_weight_, h, ffn_, fc1_bias_.get());
      } else {
        column_sum_accumulate(d_ffn.get(), tokens, ffn_, work.sum(*fc1_bias_), k);
        weight_gradient(held(d_ffn), ln2_rows, *fc1_weight_, h, ffn_);
      }
    } else {
      gemm.linear_backward_input(mlp_grad, fc2_weight_->working(), d_ffn.get(), tokens, ffn_, h);
      bias_gelu_backward(d_ffn.get(), a.fc1.get(), fc1_bias_->master(), d_ffn.get(), work.sum(*fc1_bias_), tokens,
                         ffn_, k);
      weight_gradient(held(d_ffn), ln2_rows, *fc1_weight_, h, ffn_);
    }
    whole = input = {};
    gemm.linear_backward_input(d_ffn.get(), fc1_weight_->working(), d_ln.get(), tokens, h, ffn_);
    layer_norm_input_gradient(2, d_ln.get(), dy, d_h.get(), a, mlp.layer_norm_sum, work);
  }

  // Attention half: h = x + dropout(proj(ctx) + b).
  auto d_ctx = allocate_buffer<act_t>(arena, size_t(tokens * width_));
  auto d_qkv = allocate_buffer<act_t>(arena, size_t(tokens * 3 * width_));
  const BranchGradient attn =
      branch_backward(held(d_h), *proj_bias_, backend_->dropout_site(mb, 1 + 2 * layer_), work);
  const act_t* attn_grad = rows.row_parallel_output_grad(attn.grad.data, whole, h);
  weight_gradient(gathered_or(attn_grad, whole, attn.grad), held(a.ctx), *proj_weight_, width_, h,
                  attn.gemm_sums_bias);
  gemm.linear_backward_input(attn_grad, proj_weight_->working(), d_ctx.get(), tokens, width_, h);
  whole = {};
  backend_->attention().backward(a.qkv.get(), a.ctx.get(), d_ctx.get(), a.attention.get(), d_qkv.get());
  const act_t* ln1 = rows.column_parallel_input(a.ln1.get(), input, h);
  const HeldRows ln1_rows = gathered_or(ln1, input, held(a.ln1));
  if (bias_grad_epilogue) {
    weight_gradient(held(d_qkv), ln1_rows, *qkv_weight_, h, 3 * width_, qkv_bias_.get());
  } else {
    column_sum_accumulate(d_qkv.get(), tokens, 3 * width_, work.sum(*qkv_bias_), k);
    weight_gradient(held(d_qkv), ln1_rows, *qkv_weight_, h, 3 * width_);
  }
  input = {};
  gemm.linear_backward_input(d_qkv.get(), qkv_weight_->working(), d_ln.get(), tokens, h, 3 * width_);
  // din is written last, so it may be the same memory as dout.
  layer_norm_input_gradient(1, d_ln.get(), d_h.get(), din, a, attn.layer_norm_sum, work);
}

void FusedTransformerBlock::backward_fp8(const MicroBatch& mb, const act_t* dy, act_t* din, Activations& a,
                                         ParameterGradientWork& work) {
  // backward_act_t's order, with the FP8 GEMMs and without cuBLASLt epilogues: bias gradients
  // come from the column-sum and bias + GeLU kernels.
  const ModelSpec& m = backend_->model();
  const KernelContext& k = backend_->kernel_context();
  DeviceArena& arena = backend_->arena();
  TensorParallelRows& rows = backend_->rows();
  const int64_t tokens = rows.tokens(), local = rows.local_tokens(), h = m.hidden;
  auto d_h = allocate_buffer<act_t>(arena, size_t(local * h));
  auto d_ln = allocate_buffer<act_t>(arena, size_t(tokens * h));
  DeviceBuffer<act_t> whole;  // under sequence parallelism (backward_act_t's comments)

  {  // MLP half.
    auto d_ffn = allocate_buffer<act_t>(arena, size_t(tokens * ffn_));
    const BranchGradient mlp =
        branch_backward(HeldRows{dy, nullptr}, *fc2_bias_, backend_->dropout_site(mb, 2 + 2 * layer_), work);
    fp8_linear_backward(kFc2, rows.row_parallel_output_grad(mlp.grad.data, whole, h), false, *fc2_weight_,
                        d_ffn.get(), ffn_, h, a, work);
    whole = {};
    // Under the GeLU epilogue a.fc1 is FC1's output with its bias already added (the aux matrix).
    const float* fc1_bias = gelu_epilogue_ ? nullptr : fc1_bias_->master();
    if (fp8_->scales_given()) {
      // The GeLU backward, its bias gradient and FC1's output gradient's FP8 copies in one pass.
      const Fp8Gradient d_fc1 = allocate_fp8_gradient(ffn_);
      fp8_->cast_gelu(kFc1, Fp8Operand::OutputGradient, Fp8GeluSource{a.fc1.get(), fc1_bias, d_ffn.get()}, tokens,
                      ffn_, true, work.sum(*fc1_bias_), d_fc1.data.get(), d_fc1.transposed.get(),
                      d_fc1.scale_inv.get());
      fp8_linear_gemms(kFc1, d_fc1, *fc1_weight_, d_ln.get(), h, ffn_, a, work);
    } else {
      bias_gelu_backward(d_ffn.get(), a.fc1.get(), fc1_bias, d_ffn.get(), work.sum(*fc1_bias_), tokens, ffn_, k);
      fp8_linear_backward(kFc1, d_ffn.get(), true, *fc1_weight_, d_ln.get(), h, ffn_, a, work);
    }
    layer_norm_input_gradient(2, d_ln.get(), dy, d_h.get(), a, mlp.layer_norm_sum, work);
  }

  // Attention half.
  auto d_ctx = allocate_buffer<act_t>(arena, size_t(tokens * width_));
  auto d_qkv = allocate_buffer<act_t>(arena, size_t(tokens * 3 * width_));
  const BranchGradient attn =
      branch_backward(held(d_h), *proj_bias_, backend_->dropout_site(mb, 1 + 2 * layer_), work);
  fp8_linear_backward(kProj, rows.row_parallel_output_grad(attn.grad.data, whole, h), false, *proj_weight_,
                      d_ctx.get(), width_, h, a, work);
  whole = {};
  backend_->attention().backward(a.qkv.get(), a.ctx.get(), d_ctx.get(), a.attention.get(), d_qkv.get());
  column_sum_accumulate(d_qkv.get(), tokens, 3 * width_, work.sum(*qkv_bias_), k);
  fp8_linear_backward(kQkv, d_qkv.get(), true, *qkv_weight_, d_ln.get(), h, 3 * width_, a, work);
  layer_norm_input_gradient(1, d_ln.get(), d_h.get(), din, a, attn.layer_norm_sum, work);
}

void FusedTransformerBlock::layer_norm_input_gradient(int ln, act_t* d_ln, const act_t* residual_grad, act_t* dx,
                                                      const Activations& a, float* layer_norm_sum,
                                                      ParameterGradientWork& work) {
  const int64_t local = backend_->rows().local_tokens();
  const bool first = ln == 1;
  const DeviceBuffer<float>& stats = first ? a.ln1_stats : a.ln2_stats;
  Parameter& weight = first ? *ln1_weight_ : *ln2_weight_;
  Parameter& bias = first ? *ln1_bias_ : *ln2_bias_;
  DeviceBuffer<act_t> d_ln_local;  // under sequence parallelism: this rank's rows of the sum
  const act_t* dy = backend_->rows().column_parallel_input_grad(d_ln, d_ln_local, backend_->model().hidden);
  layer_norm_backward(dy, first ? a.x.get() : a.h.get(), weight.master(), stats.get(), stats.get() + local,
                      residual_grad, dx, work.sum(weight), work.sum(bias), local, backend_->model().hidden,
                      backend_->kernel_context(), layer_norm_sum);
}

void FusedTransformerBlock::bind_fp8_scaling(Tensor amax, Tensor scale) {
  const std::string where = "block " + std::to_string(layer_) + " bind_fp8_scaling: ";
  if (!fp8_) throw Error("kernels-fused: " + where + "this block runs no FP8 GEMMs under the binding's recipe");
  backend_->expect(amax, DType::F32, MemoryKind::Cuda, {kFp8BlockLinears, kFp8Operands}, where + "amax");
  backend_->expect(scale, DType::F32, MemoryKind::Cuda, {kFp8BlockLinears, kFp8Operands}, where + "scale");
  fp8_->bind(amax.as<float>(), scale.as<const float>());
}

bool FusedTransformerBlock::fp8_gelu_epilogue_offered() {
  const ModelSpec& m = backend_->model();
  const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
  const BackendOptions& options = backend_->options();
  backend_->activate();
  const bool offered = backend_->gemm().fp8_nt_offers(GemmEpilogue::Kind::GeluAuxBias, false, tokens, ffn_, m.hidden,
                                                      options.fp8_forward_fast_accumulation);
  if (!offered && layer_ == 0)
    backend_->log().write(LogLevel::Info,
                          "kernels-fused: cuBLASLt offers no FP8 GEMM with the bias + GeLU epilogue here; the bias + "
                          "GeLU kernel does that work");
  return offered;
}

std::vector<Parameter*> FusedTransformerBlock::summed_parameters() const {
  return {ln1_weight_.get(), ln1_bias_.get(), qkv_bias_.get(), proj_bias_.get(),
          ln2_weight_.get(), ln2_bias_.get(), fc1_bias_.get(), fc2_bias_.get()};
}

bool FusedTransformerBlock::start_gradients(const MicroBatch& mb) {
  if (!mb.first_gradient) return true;
  // The bias and LayerNorm gradients are sums that several kernels add to: they start from zero,
  // in one launch. The weight-gradient GEMMs write theirs, unless the option says to zero them too.
  const bool gemms_write = backend_->options().first_backward_writes_gradients;
  std::vector<FloatSpan> zeroed;
  for (Parameter* p : summed_parameters()) zeroed.push_back({p->grad(), p->numel()});
  zero_fill(zeroed, backend_->stream());
  if (!gemms_write)
    for (const auto* p : {&qkv_weight_, &proj_weight_, &fc1_weight_, &fc2_weight_})
      PTDP_CALL(cudaMemsetAsync((*p)->grad(), 0, size_t((*p)->numel()) * sizeof(float), backend_->stream()));
  return !gemms_write;
}

FusedTransformerBlock::BranchGradient FusedTransformerBlock::branch_backward(const HeldRows& dout, Parameter& bias,
                                                                            const DropoutSite& dropout,
                                                                            ParameterGradientWork& work) {
  const ModelSpec& m = backend_->model();
  const TensorParallelRows& rows = backend_->rows();
  const int64_t local = rows.local_tokens();
  const KernelContext& k = backend_->kernel_context();
  if (dropout.active()) {
    auto masked = allocate_buffer<act_t>(backend_->arena(), size_t(local * m.hidden));
    bias_dropout_add_backward(dout.data, masked.get(), work.sum(bias), local, m.hidden, dropout, k);
    return {held(masked), nullptr, nullptr};
  }
  // Without dropout the branch's gradient is dout itself: nothing to copy, and its column sums
  // are the bias gradient. Under sequence parallelism they are this rank's rows' sums, which the
  // weight-gradient GEMM, reading all rows, cannot give; FP8 GEMMs have no such epilogue.
  if (backend_->options().layer_norm_bias_grads) return {dout, nullptr, work.sum(bias)};
  if (backend_->options().bias_grad_epilogue && !rows.sequence_parallel() && !fp8_) return {dout, &bias, nullptr};
  column_sum_accumulate(dout.data, local, m.hidden, work.sum(bias), k);
  return {dout, nullptr, nullptr};
}

void FusedTransformerBlock::release(int slot) {
  saved_.release(slot);
  weight_work_.release(slot);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
