#pragma once
// A LayerKernels that only moves host memory: what CheckpointManager needs. Making layers or
// stepping the optimizer throws; a test that needs layers derives and makes its own. Counts the
// buffers allocate() hands out.
#include <cstdlib>
#include <cstring>

#include <ptdp/layer_kernels.hpp>

namespace ptdp::test {

class HostMemoryKernels : public LayerKernels {
 public:
  int params_updated_calls = 0;
  int allocations = 0;

  void bind(const KernelsBinding&) override { unused("bind"); }
  Device device() const override { return Device{}; }
  int device_count() const override { return 1; }
  DType activation_dtype() const override { return DType::F32; }
  std::shared_ptr<EmbeddingLayer> make_embedding() override { unused("make_embedding"); }
  std::shared_ptr<TransformerBlock> make_block(int) override { unused("make_block"); }
  std::shared_ptr<HeadLayer> make_head(EmbeddingLayer*) override { unused("make_head"); }
  OwnedTensor allocate(const std::vector<int64_t>& shape, DType dtype) override {
    ++allocations;
    Tensor view{nullptr, dtype, shape, Device{}};
    std::shared_ptr<void> storage(std::calloc(view.bytes() + 1, 1), std::free);
    view.data = storage.get();
    return OwnedTensor{view, storage};
  }
  void copy_from_host(Tensor dst, const void* src) override { std::memcpy(dst.data, src, dst.bytes()); }
  void copy_to_host(void* dst, const Tensor& src) override { std::memcpy(dst, src.data, src.bytes()); }
  void copy(Tensor dst, const Tensor& src) override { std::memcpy(dst.data, src.data, src.bytes()); }
  void fill_zero(Tensor t) override { std::memset(t.data, 0, t.bytes()); }
  double sum_squares(const std::vector<Tensor>&) override { unused("sum_squares"); }
  void sum_squares_into(const std::vector<Tensor>&, Tensor) override { unused("sum_squares_into"); }
  void adam_step(const std::vector<ParamRef>&, const AdamStep&) override { unused("adam_step"); }
  void place_parameters(const std::vector<ParamRef>&) override { unused("place_parameters"); }
  void params_updated() override { ++params_updated_calls; }
  void set_weights(const std::vector<ParamRef>&) override { unused("set_weights"); }
  void release_cached_memory() override {}
  void synchronize() override {}
  void* stream() override { return nullptr; }
  // Every call completes before it returns: there is nothing to order.
  void* side_stream() override { return nullptr; }
  void side_waits_for_compute() override {}
  void compute_waits_for_side() override {}

 private:
  [[noreturn]] static void unused(const char* what) {
    throw Error(std::string("HostMemoryKernels::") + what + " is not part of these tests");
  }
};

}  // namespace ptdp::test
