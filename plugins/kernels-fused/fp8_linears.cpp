#include "fp8_linears.hpp"

#include <vector>

#include "fp8_transpose.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

constexpr int kEntries = kFp8BlockLinears * kFp8Operands;

}  // namespace

Fp8Linears::Fp8Linears(Backend& backend, const Fp8Recipe& recipe) : backend_(backend), recipe_(recipe) {
  own_ = allocate_buffer<float>(backend_.arena(), 2 * kEntries);
  std::vector<float> initial(2 * kEntries, 0.0f);
  std::fill(initial.begin() + kEntries, initial.end(), 1.0f);  // scales 1 until the core gives others
  PTDP_CALL(cudaMemcpyAsync(own_.get(), initial.data(), initial.size() * sizeof(float), cudaMemcpyHostToDevice,
                            backend_.stream()));
  PTDP_CALL(cudaStreamSynchronize(backend_.stream()));
  bind(own_.get(), own_.get() + kEntries);
  state_ = allocate_buffer<float>(backend_.arena(), size_t(kScaleStride) * (2 * kFp8BlockLinears + 1));
  amax_partials_ = allocate_buffer<float>(backend_.arena(), Fp8AmaxScratch::kMaxBlocks);
  amax_counter_ = allocate_buffer<unsigned>(backend_.arena(), 1);
  PTDP_CALL(cudaMemsetAsync(amax_counter_.get(), 0, sizeof(unsigned), backend_.stream()));
  amax_scratch_ = Fp8AmaxScratch{amax_partials_.get(), amax_counter_.get()};
}

Fp8Linears::~Fp8Linears() {
  for (WeightCopy& copy : weights_)
    if (copy.writer) copy.writer->set_fp8_update_copy(nullptr);
}

void Fp8Linears::bind(float* amax, const float* scale) {
  amax_ = amax;
  scale_ = scale;
  if (amax != own_.get()) own_ = {};
}

void Fp8Linears::prepare_weights(Parameter* const (&weights)[kFp8BlockLinears], bool training) {
  const KernelContext& k = backend_.kernel_context();
  Fp8AmaxRecords records;
  for (int i = 0; i < kFp8BlockLinears; ++i) {
    Parameter& w = *weights[i];
    float* scale_inv = weight_scale_inv(i);
    float* amax = state_.get() + kScaleStride * (kFp8BlockLinears + i);
    WeightCopy& copy = weights_[i];
    const uint64_t version = w.values_version();
    const int64_t out = w.spec().local_shape.at(0) * (w.spec().local_shape.size() == 3 ? w.spec().local_shape[1] : 1);
    const int64_t in = w.numel() / out;
    if (copy.update.made_from != version) {
      if (!copy.data) {
        copy.data = allocate_buffer<fp8>(backend_.arena(), size_t(w.numel()));
        copy.transposed = allocate_buffer<fp8>(backend_.arena(), size_t(w.numel()));
      }
      // From the fp32 master where this rank keeps one (one rounding, as kernels-ref casts), else
      // from the working copy (parameter.hpp: working_copy_without_master).
      const auto cast_weight = [&](auto* values) {
        Fp8ScaleSource source;
        source.margin = recipe_.margin;
        if (recipe_.scaling == Fp8Scaling::Tensorwise) {
          fp8_amax(values, w.numel(), amax, amax_scratch_, k);
          backend_.all_reduce(amax, DType::F32, 1, ReduceOp::Max);  // every weight is split over the group
          source.amax = amax;
          fp8_cast(values, out, in, Fp8Kind::E4M3, source, copy.data.get(), copy.transposed.get(), scale_inv, nullptr,
                   k);
        } else {
          // The cast raises the amax it finds into *amax.
          PTDP_CALL(cudaMemsetAsync(amax, 0, sizeof(float), backend_.stream()));
          source.scale = scale_slot(i, Fp8Operand::Weight);
          fp8_cast(values, out, in, Fp8Kind::E4M3, source, copy.data.get(), copy.transposed.get(), scale_inv, amax, k);
        }
      };
      if (w.master()) cast_weight(static_cast<const float*>(w.master()));
      else cast_weight(static_cast<const act_t*>(w.working()));
      copy.update.made_from = copy.transposed_from = version;
    } else if (copy.transposed_from != version) {
      // The optimizer step wrote the stored copy, its amax and scale inverse.
      fp8_transpose(copy.data.get(), out, in, copy.transposed.get(), k);
      copy.transposed_from = version;
    }
    // The scale the next step's copy is made under is known when the optimizer step runs (the
    // core finishes the step's amaxes first), so that step writes it, where it updates the
    // whole master: one byte written an element instead of four read again here. Set each
    // forward: the core may bind other scale tensors.
    if (recipe_.scaling == Fp8Scaling::Delayed && w.master() && !w.placed_without_master()) {
      copy.update.data = copy.data.get();
      copy.update.scale = scale_slot(i, Fp8Operand::Weight);
      copy.update.scale_inv = scale_inv;
      copy.update.amax = amax;
      w.set_fp8_update_copy(&copy.update);
      copy.writer = &w;
    }
    if (training) {
      records.record[records.count] = amax_slot(i, Fp8Operand::Weight);
      records.value[records.count++] = amax;
    }
  }
  fp8_record_amax(records, k);
}

Fp8Matrix Fp8Linears::weight(int k) const {
  return Fp8Matrix{weights_[k].data.get(), false, weight_scale_inv(k)};
}

Fp8Matrix Fp8Linears::weight_transposed(int k) const {
  return Fp8Matrix{weights_[k].transposed.get(), false, weight_scale_inv(k)};
}

void Fp8Linears::cast(int k, Fp8Operand operand, const act_t* x, int64_t rows, int64_t cols, bool sharded,
                      bool training, fp8* out, fp8* transposed, float* scale_inv) {
  const KernelContext& ctx = backend_.kernel_context();
  const Fp8Kind kind = operand == Fp8Operand::OutputGradient ? Fp8Kind::E5M2 : Fp8Kind::E4M3;
  float* record = training ? amax_slot(k, operand) : nullptr;
  Fp8ScaleSource source;
  source.margin = recipe_.margin;
  if (recipe_.scaling == Fp8Scaling::Tensorwise) {
    // The cast reads the amax in stream order, so one scratch float serves every cast.
    float* amax = state_.get() + kScaleStride * 2 * kFp8BlockLinears;
    fp8_amax(x, rows * cols, amax, amax_scratch_, ctx);
    if (sharded) backend_.all_reduce(amax, DType::F32, 1, ReduceOp::Max);
    source.amax = amax;
  } else {
    source.scale = scale_slot(k, operand);
  }
  fp8_cast(x, rows, cols, kind, source, out, transposed, scale_inv, record, ctx);
}

LayerNormFp8Out Fp8Linears::layer_norm_output(int k, bool training, fp8* out, fp8* transposed,
                                              float* scale_inv) const {
  if (!scales_given()) throw Error("kernels-fused: LayerNorm writes FP8 only under a given (delayed) scale");
  LayerNormFp8Out y;
  y.scale = scale_slot(k, Fp8Operand::Input);
  y.out = out;
  y.out_t = transposed;
  y.scale_inv = scale_inv;
  y.record = training ? amax_slot(k, Fp8Operand::Input) : nullptr;
  return y;
}

void Fp8Linears::cast_gelu(int k, Fp8Operand operand, const Fp8GeluSource& gelu, int64_t rows, int64_t cols,
                           bool training, float* dbias, fp8* out, fp8* transposed, float* scale_inv) {
  Fp8ScaleSource source;
  source.margin = recipe_.margin;
  source.scale = scale_slot(k, operand);
  const Fp8Kind kind = operand == Fp8Operand::OutputGradient ? Fp8Kind::E5M2 : Fp8Kind::E4M3;
  fp8_cast_gelu(gelu, rows, cols, kind, source, out, transposed, scale_inv, training ? amax_slot(k, operand) : nullptr,
                dbias, backend_.kernel_context());
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
