#include "runtime/fp8_scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ptdp {

namespace {

constexpr int kBlockEntries = kFp8BlockLinears * kFp8Operands;

std::string history_name(int layer) { return fmt::format("layers.{}.fp8_amax_history", layer); }

}  // namespace

Fp8ScalingState::Fp8ScalingState(LayerKernels& kernels, const Fp8Recipe& recipe, int model_layers,
                                 const std::vector<std::pair<int, TransformerBlock*>>& blocks)
    : kernels_(kernels), recipe_(recipe) {
  std::vector<TransformerBlock*> in_fp8;
  for (const auto& [layer, block] : blocks) {
    if (!recipe.block_in_fp8(layer, model_layers)) continue;
    layers_.push_back(layer);
    in_fp8.push_back(block);
  }
  if (layers_.empty()) return;
  const int64_t count = static_cast<int64_t>(layers_.size());
  amax_ = kernels_.allocate({count, kFp8BlockLinears, kFp8Operands}, DType::F32);
  scale_ = kernels_.allocate({count, kFp8BlockLinears, kFp8Operands}, DType::F32);
  for (int64_t b = 0; b < count; ++b) {
    Tensor amax = amax_.view.flat_slice(b * kBlockEntries, kBlockEntries);
    Tensor scale = scale_.view.flat_slice(b * kBlockEntries, kBlockEntries);
    amax.shape = scale.shape = {kFp8BlockLinears, kFp8Operands};
    in_fp8[static_cast<size_t>(b)]->bind_fp8_scaling(amax, scale);
  }
  if (delayed()) history_.assign(static_cast<size_t>(recipe_.amax_history) * count * kBlockEntries, 0.0f);
  write_scales();
}

void Fp8ScalingState::begin_step() {
  if (!layers_.empty()) kernels_.fill_zero(amax_.view);
}

std::string Fp8ScalingState::entry_name(size_t entry) const {
  const size_t block = entry / kBlockEntries, linear = entry % kBlockEntries / kFp8Operands;
  return fmt::format("layers.{}.{} {}", layers_[block], kFp8BlockLinearNames[linear],
                     kFp8OperandNames[entry % kFp8Operands]);
}

std::string Fp8ScalingState::first_non_finite_amax() {
  if (layers_.empty()) return "";
  std::vector<float> amax(static_cast<size_t>(amax_.view.numel()));
  kernels_.copy_to_host(amax.data(), amax_.view);
  kernels_.synchronize();
  for (size_t i = 0; i < amax.size(); ++i)
    if (!std::isfinite(amax[i])) return fmt::format("{} ({})", entry_name(i), amax[i]);
  return "";
}

std::string Fp8ScalingState::finish_step(const ParallelGroups& groups) {
  if (!delayed()) return "";
  for (Communicator* group : {groups.tensor.get(), groups.data.get()})
    if (group != nullptr && group->size() > 1) group->all_reduce(amax_.view, ReduceOp::Max);
  const std::string non_finite = first_non_finite_amax();
  if (!non_finite.empty()) return non_finite;
  // The newest step goes first; the oldest falls off the end.
  const size_t row = static_cast<size_t>(amax_.view.numel());
  std::copy_backward(history_.begin(), history_.end() - static_cast<std::ptrdiff_t>(row), history_.end());
  kernels_.copy_to_host(history_.data(), amax_.view);
  kernels_.synchronize();
  write_scales();
  return "";
}

void Fp8ScalingState::write_scales() {
  if (layers_.empty()) return;
  const size_t row = static_cast<size_t>(scale_.view.numel());
  std::vector<float> scales(row, 1.0f);
  if (delayed()) {
    const size_t rows = recipe_.amax_compute == Fp8AmaxCompute::MostRecent ? 1 : history_.size() / row;
    for (size_t i = 0; i < row; ++i) {
      float amax = 0.0f;
      for (size_t r = 0; r < rows; ++r) amax = std::max(amax, history_[r * row + i]);
      scales[i] = fp8_scale(amax, fp8_operand_max(static_cast<Fp8Operand>(i % kFp8Operands)), recipe_.margin);
    }
  }
  kernels_.copy_from_host(scale_.view, scales.data());
  kernels_.synchronize();
}

std::vector<HostStateTensor> Fp8ScalingState::history() const {
  std::vector<HostStateTensor> out;
  if (!delayed()) return out;
  const size_t row = layers_.size() * kBlockEntries;
  const size_t rows = history_.size() / row;
  for (size_t b = 0; b < layers_.size(); ++b) {
    HostStateTensor t{history_name(layers_[b]), {static_cast<int64_t>(rows), kFp8BlockLinears, kFp8Operands}, {}};
    for (size_t r = 0; r < rows; ++r)
      t.values.insert(t.values.end(), history_.begin() + static_cast<std::ptrdiff_t>(r * row + b * kBlockEntries),
                      history_.begin() + static_cast<std::ptrdiff_t>(r * row + (b + 1) * kBlockEntries));
    out.push_back(std::move(t));
  }
  return out;
}

void Fp8ScalingState::load_history(const std::vector<HostStateTensor>& saved) {
  if (!delayed()) return;
  const size_t row = layers_.size() * kBlockEntries;
  const size_t rows = history_.size() / row;
  std::fill(history_.begin(), history_.end(), 0.0f);
  for (size_t b = 0; b < layers_.size(); ++b) {
    const auto found = std::find_if(saved.begin(), saved.end(),
                                    [&](const HostStateTensor& t) { return t.name == history_name(layers_[b]); });
    if (found == saved.end()) continue;
    const size_t saved_rows = std::min(rows, found->values.size() / kBlockEntries);
    for (size_t r = 0; r < saved_rows; ++r)
      std::copy_n(found->values.begin() + static_cast<std::ptrdiff_t>(r * kBlockEntries), kBlockEntries,
                  history_.begin() + static_cast<std::ptrdiff_t>(r * row + b * kBlockEntries));
  }
  write_scales();
}

}  // namespace ptdp
