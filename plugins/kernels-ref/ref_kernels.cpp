#include "ref_kernels.hpp"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>

#include "adam.hpp"
#include "block.hpp"
#include "embedding.hpp"
#include "head.hpp"
#include "host_memory.hpp"
#include "parameter.hpp"
#include "partition.hpp"
#include "tensor_checks.hpp"

namespace ptdp::kref {

namespace {

// OpenBLAS's thread count is one setting of the whole process, and ranks sharing a process
// (threads, in tests) construct their backends concurrently.
void set_blas_threads(int threads) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

}  // namespace

RefKernelsOptions RefKernelsOptions::from_config(const ConfigView& config) {
  RefKernelsOptions options;
  options.threads = static_cast<int>(config.get_int("threads"));
  return options;
}

RefKernels::RefKernels(const RefKernelsOptions& options) {
  if (options.threads < 1)
    throw Error("kernels-ref: threads must be at least 1 (got " + std::to_string(options.threads) + ")");
  set_blas_threads(options.threads);
}

void RefKernels::bind(const KernelsBinding& binding) {
  if (partition_) throw Error("kernels-ref: bind() was called twice; a backend serves one binding");
  partition_ = std::make_shared<const Partition>(make_partition(binding));
}

const Partition& RefKernels::bound(const char* what) const {
  if (!partition_) throw Error(std::string("kernels-ref: ") + what + " before bind()");
  return *partition_;
}

std::shared_ptr<EmbeddingLayer> RefKernels::make_embedding() {
  bound("make_embedding");
  return std::make_shared<RefEmbedding>(partition_);
}

std::shared_ptr<TransformerBlock> RefKernels::make_block(int layer_index) {
  const Partition& p = bound("make_block");
  if (layer_index < 0 || layer_index >= p.model.layers)
    throw Error("kernels-ref: make_block(" + std::to_string(layer_index) + "): the model has layers 0.." +
                std::to_string(p.model.layers - 1));
  return std::make_shared<RefBlock>(partition_, layer_index);
}

std::shared_ptr<HeadLayer> RefKernels::make_head(EmbeddingLayer* tied) {
  bound("make_head");
  if (tied == nullptr) return std::make_shared<RefHead>(partition_, nullptr);
  auto* embedding = dynamic_cast<RefEmbedding*>(tied);
  if (embedding == nullptr || embedding->partition() != partition_.get())
    throw Error("kernels-ref: make_head was given an embedding layer that this backend did not make");
  return std::make_shared<RefHead>(partition_, embedding->word());
}

OwnedTensor RefKernels::allocate(const std::vector<int64_t>& shape, DType dtype) {
  return allocate_host(shape, dtype);
}

void RefKernels::copy_from_host(Tensor dst, const void* src) {
  check_host_memory(dst, "copy_from_host destination");
  std::memcpy(dst.data, src, dst.bytes());
}

void RefKernels::copy_to_host(void* dst, const Tensor& src) {
  check_host_memory(src, "copy_to_host source");
  std::memcpy(dst, src.data, src.bytes());
}

void RefKernels::copy(Tensor dst, const Tensor& src) {
  check_host_memory(dst, "copy destination");
  check_host_memory(src, "copy source");
  if (dst.bytes() != src.bytes())
    throw Error("kernels-ref: copy of " + std::string(dtype_name(src.dtype)) + " " + shape_string(src.shape) +
                " into " + dtype_name(dst.dtype) + " " + shape_string(dst.shape) + ": sizes differ");
  std::memmove(dst.data, src.data, src.bytes());
}

void RefKernels::fill_zero(Tensor t) {
  check_host_memory(t, "fill_zero tensor");
  std::memset(t.data, 0, t.bytes());
}

double RefKernels::sum_squares(const std::vector<Tensor>& tensors) {
  double sum = 0.0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_host_tensor(t, DType::F32, t.shape, "sum_squares tensor " + std::to_string(i));
    const float* x = t.as<float>();
    for (int64_t k = 0; k < t.numel(); ++k) sum += static_cast<double>(x[k]) * x[k];
  }
  return sum;
}

void RefKernels::sum_squares_into(const std::vector<Tensor>& tensors, Tensor out) {
  check_host_tensor(out, DType::F32, {1}, "sum_squares_into out");
  *out.as<float>() = static_cast<float>(sum_squares(tensors));
}

void RefKernels::adam_step(const std::vector<ParamRef>& params, const AdamStep& step) {
  if (!(step.loss_scale > 0.0f) || !std::isfinite(step.loss_scale))
    throw Error("kernels-ref: adam_step loss_scale must be positive and finite (got " +
                std::to_string(step.loss_scale) + ")");
  AdamStep scaled = step;
  if (step.grad_sum_squares.data) {
    check_host_tensor(step.grad_sum_squares, DType::F32, {1}, "adam_step grad_sum_squares");
    // The sum is of the scaled gradients: the true norm is its root over the loss scale.
    const double norm = std::sqrt(static_cast<double>(*step.grad_sum_squares.as<float>())) / step.loss_scale;
    if (!std::isfinite(norm)) return;  // nothing is updated
    scaled.grad_scale = grad_clip_scale(norm, step.max_grad_norm);
  }
  for (const ParamRef& p : params) adam_update(p, scaled);
}

void RefKernels::place_parameters(const std::vector<ParamRef>& params) {
  bound("place_parameters").parameters->place(params);
}

void RefKernels::set_weights(const std::vector<ParamRef>& params) {
  bound("set_weights").parameters->set_weights(params);
}

}  // namespace ptdp::kref
