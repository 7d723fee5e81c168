#pragma once
// kernels-ref: the LayerKernels backend on the CPU in fp32 (fp16 emulated by rounding), the
// definition of correct that every other backend is compared with. Tests link it directly (target ptdp-kernels-ref-impl); the
// plugin (libptdp-kernels-ref.so) wraps the same class. Parameter names, shapes and the way each
// is split over the tensor-parallel group are described in README.md next to this file.
#include <memory>
#include <vector>

#include <ptdp/config.hpp>
#include <ptdp/layer_kernels.hpp>

namespace ptdp::kref {

struct Partition;

struct RefKernelsOptions {
  int threads = 1;  // OpenBLAS threads (a process-wide setting)

  static RefKernelsOptions from_config(const ConfigView& config);
};

class RefKernels : public LayerKernels {
 public:
  explicit RefKernels(const RefKernelsOptions& options = {});

  void bind(const KernelsBinding& binding) override;
  Device device() const override { return Device{MemoryKind::Host, 0}; }
  int device_count() const override { return 1; }
  DType activation_dtype() const override { return DType::F32; }
  // FP8 and fp16 are emulated (fp8_format.hpp, fp16_format.hpp), so that every part of those
  // recipes but the GEMM kernels runs and is tested on the CPU.
  uint32_t precisions() const override {
    return precision_bit(PrecisionSupport::Fp8Hybrid) | precision_bit(PrecisionSupport::Fp16);
  }
  uint32_t activation_memory_features() const override {
    return feature_bit(ActivationMemoryFeature::SequenceParallel) | feature_bit(ActivationMemoryFeature::SelectiveRecompute);
  }
  // The blocks run backward_input and backward_weight; the embedding and head run their whole
  // backward at a split backward's BackwardInput.
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
  // Masters are the working weights here, so there is nothing to refresh.
  void params_updated() override {}
  void set_weights(const std::vector<ParamRef>& params) override;
  void release_cached_memory() override {}  // host memory goes back when freed
  void synchronize() override {}
  void* stream() override { return nullptr; }
  // Every call completes before it returns: there is nothing to order.
  void* side_stream() override { return nullptr; }
  void side_waits_for_compute() override {}
  void compute_waits_for_side() override {}

 private:
  const Partition& bound(const char* what) const;

  std::shared_ptr<const Partition> partition_;
};

}  // namespace ptdp::kref
