#include "parameter_gradient_work.hpp"

#include "ptdp/checked_call_cuda.hpp"
#include "ptdp/error.hpp"
#include "zero_fill.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

namespace {
// Each partial sum starts 256 bytes apart, as the arena aligns blocks.
constexpr int64_t kPartialAlignment = 64;
int64_t aligned(int64_t count) { return (count + kPartialAlignment - 1) / kPartialAlignment * kPartialAlignment; }
}  // namespace

ParameterGradientWork ParameterGradientWork::immediate(bool accumulate) {
  ParameterGradientWork work;
  work.accumulate_ = accumulate;
  return work;
}

ParameterGradientWork ParameterGradientWork::deferred(const std::vector<Parameter*>& summed, DeviceArena& arena,
                                                      cudaStream_t stream) {
  ParameterGradientWork work;
  work.deferred_ = true;
  work.arena_ = &arena;
  work.stream_ = stream;
  int64_t total = 0;
  for (const Parameter* p : summed) total += aligned(p->numel());
  work.partials_ = allocate_buffer<float>(arena, size_t(total));
  std::vector<FloatSpan> zeroed;
  float* next = work.partials_.get();
  for (Parameter* p : summed) {
    work.sums_.emplace_back(p, next);
    zeroed.push_back({next, p->numel()});
    next += aligned(p->numel());
  }
  zero_fill(zeroed, stream);
  return work;
}

float* ParameterGradientWork::sum(Parameter& p) {
  if (!deferred_) return p.grad();
  for (const auto& [param, partial] : sums_)
    if (param == &p) return partial;
  throw Error("kernels-fused: a split backward sums the gradient of a parameter it keeps no partial sum for");
}

HeldRows ParameterGradientWork::hold(const HeldRows& rows, int64_t count) {
  if (!deferred_ || rows.block) return rows;
  auto copy = allocate_buffer<act_t>(*arena_, size_t(count));
  PTDP_CALL(cudaMemcpyAsync(copy.get(), rows.data, size_t(count) * sizeof(act_t), cudaMemcpyDeviceToDevice, stream_));
  return held(copy);
}

void ParameterGradientWork::weight_gemm(WeightGemm gemm) {
  if (deferred_) gemms_.push_back(std::move(gemm));
  else gemm(accumulate_);
}

void ParameterGradientWork::finish(bool accumulate) {
  for (const WeightGemm& gemm : gemms_) gemm(accumulate);
  std::vector<FloatSpanSum> added;
  for (const auto& [param, partial] : sums_) added.push_back({{param->grad(), param->numel()}, partial});
  add_spans(added, stream_);
  // All work is on the one stream: the blocks may go back to the arena while it is still queued.
  gemms_.clear();
  sums_.clear();
  partials_ = {};
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
