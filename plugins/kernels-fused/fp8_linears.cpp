#include "fp8_linears.hpp"

#include <vector>

#include "ptdp/checked_call_cuda.hpp"

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

void Fp8Linears::bind(float* amax, const float* scale) {
  amax_ = amax;
  scale_ = scale;
  if (amax != own_.get()) own_ = {};
}

void Fp8Linears::prepare_weights(Parameter* const (&weights)[kFp8BlockLinears], bool training) {
  const KernelContext& k = backend_.kernel_context();
  Fp8AmaxRecords records;
  for (int i = 0; i < kFp8BlockLinears; ++i) {
    const Parameter& w = *weights[i];
    float* scale_inv = weight_scale_inv(i);
    float* amax = state_.get() + kScaleStride * (kFp8BlockLinears + i);
    WeightCopy& copy = weights_[i];
    if (copy.version != w.values_version()) {
      const int64_t out = w.spec().local_shape.at(0) * (w.spec().local_shape.size() == 3 ? w.spec().local_shape[1] : 1);
      const int64_t in = w.numel() / out;
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
      copy.version = w.values_version();
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
