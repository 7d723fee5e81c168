#pragma once
// KernelsByPrecision: the plugin's LayerKernels. kernels-fused is compiled once for each 16-bit
// type it keeps activations and working weights in (activation_type.hpp); this holds one
// KernelsFused of each and passes every call to the bf16 one, until bind() is given
// precision.params = "fp16" (KernelsBinding::working = F16): from then on, to the fp16 one.
#include <memory>
#include <vector>

#include "ptdp/layer_kernels.hpp"
#include "ptdp/plugin.hpp"

namespace ptdp::fused {

class KernelsByPrecision final : public LayerKernels {
 public:
  explicit KernelsByPrecision(const PluginContext& context);

  void bind(const KernelsBinding& binding) override;
  Device device() const override { return active_->device(); }
  int device_count() const override { return active_->device_count(); }
  DType activation_dtype() const override { return active_->activation_dtype(); }
  uint32_t precisions() const override { return active_->precisions(); }
  uint32_t activation_memory_features() const override { return active_->activation_memory_features(); }
  bool splits_backward() const override { return active_->splits_backward(); }

  std::shared_ptr<EmbeddingLayer> make_embedding() override { return active_->make_embedding(); }
  std::shared_ptr<TransformerBlock> make_block(int layer_index) override { return active_->make_block(layer_index); }
  std::shared_ptr<HeadLayer> make_head(EmbeddingLayer* tied) override { return active_->make_head(tied); }

  OwnedTensor allocate(const std::vector<int64_t>& shape, DType dtype) override { return active_->allocate(shape, dtype); }
  void copy_from_host(Tensor dst, const void* src) override { active_->copy_from_host(dst, src); }
  void copy_to_host(void* dst, const Tensor& src) override { active_->copy_to_host(dst, src); }
  void copy(Tensor dst, const Tensor& src) override { active_->copy(dst, src); }
  void fill_zero(Tensor t) override { active_->fill_zero(t); }
  double sum_squares(const std::vector<Tensor>& tensors) override { return active_->sum_squares(tensors); }
  void sum_squares_into(const std::vector<Tensor>& tensors, Tensor out) override { active_->sum_squares_into(tensors, out); }
  void adam_step(const std::vector<ParamRef>& params, const AdamStep& step) override { active_->adam_step(params, step); }
  void place_parameters(const std::vector<ParamRef>& params) override { active_->place_parameters(params); }
  void params_updated() override { active_->params_updated(); }
  void set_weights(const std::vector<ParamRef>& params) override { active_->set_weights(params); }
  void release_cached_memory() override { active_->release_cached_memory(); }
  void synchronize() override { active_->synchronize(); }
  void* stream() override { return active_->stream(); }
  void* side_stream() override { return active_->side_stream(); }
  void side_waits_for_compute() override { active_->side_waits_for_compute(); }
  void compute_waits_for_side() override { active_->compute_waits_for_side(); }
  void* transfer_stream() override { return active_->transfer_stream(); }
  void transfer_waits_for_compute() override { active_->transfer_waits_for_compute(); }
  void compute_waits_for_transfer() override { active_->compute_waits_for_transfer(); }

 private:
  std::unique_ptr<LayerKernels> bf16_;
  std::unique_ptr<LayerKernels> fp16_;
  LayerKernels* active_;
};

}  // namespace ptdp::fused
