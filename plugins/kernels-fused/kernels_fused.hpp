#pragma once
// KernelsFused: the LayerKernels backend in CUDA C++ (act_t activations and working weights: bf16,
// or fp16 in the fp16 variant; fp32 master weights, gradients and Adam state). Until bind() it
// only knows its options; bind() makes the Backend that the layers it hands out share.
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "ptdp/layer_kernels.hpp"
#include "ptdp/plugin.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class KernelsFused final : public LayerKernels {
 public:
  // Reads the options of plugin_entry.cpp's schema; without a configuration, their defaults.
  explicit KernelsFused(const PluginContext& context);
  ~KernelsFused() override;
  KernelsFused(const KernelsFused&) = delete;
  KernelsFused& operator=(const KernelsFused&) = delete;

  void bind(const KernelsBinding& binding) override;
  Device device() const override { return Device{MemoryKind::Cuda, device_index_}; }
  int device_count() const override;
  DType activation_dtype() const override { return kActDType; }
  // fp16 (with loss scaling) on any GPU; FP8 (the hybrid recipe) where every visible GPU has
  // FP8 tensor cores.
  uint32_t precisions() const override;
  uint32_t activation_memory_features() const override;
  // The blocks run backward_input and backward_weight apart, in act_t and in FP8 alike.
  bool splits_backward() const override { return true; }

  std::shared_ptr<EmbeddingLayer> make_embedding() override;
  std::shared_ptr<TransformerBlock> make_block(int layer_index) override;
  std::shared_ptr<HeadLayer> make_head(EmbeddingLayer* tied) override;

  OwnedTensor allocate(const std::vector<int64_t>& shape, DType dtype) override;
  void copy_from_host(Tensor dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void copy(Tensor dst, const Tensor& src) override;
  void fill_zero(Tensor t) override;
  double sum_squares(const std::vector<Tensor>& tensors) override;
  void sum_squares_into(const std::vector<Tensor>& tensors, Tensor out) override;
  void adam_step(const std::vector<ParamRef>& params, const AdamStep& step) override;
  void place_parameters(const std::vector<ParamRef>& params) override;
  void params_updated() override;
  void set_weights(const std::vector<ParamRef>& params) override;
  void release_cached_memory() override;
  void synchronize() override;
  void* stream() override;
  void* side_stream() override;
  void side_waits_for_compute() override;
  void* transfer_stream() override;
  void transfer_waits_for_compute() override;
  void compute_waits_for_transfer() override;
  void compute_waits_for_side() override;

 private:
  std::shared_ptr<Backend>& bound();
  void expect_device(const Tensor& t, const std::string& what) const;

  PluginLog log_;
  BackendOptions options_;
  int device_index_ = 0;
  std::shared_ptr<Backend> backend_;
};

// The plugin's factory of this variant (kernels_by_precision.cpp holds one of each).
std::unique_ptr<LayerKernels> make_kernels_fused(const PluginContext& context);

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
