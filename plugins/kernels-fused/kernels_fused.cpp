// kernels-fused's LayerKernels: bind() and the calls outside the layers (memory, copies, the
// optimizer step); the layers are in embedding_layer, transformer_block and head_layer.
#include "kernels_fused.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "adam.hpp"
#include "embedding_layer.hpp"
#include "flash_attention.hpp"
#include "grad_norm.hpp"
#include "head_layer.hpp"
#include "ptdp/checked_call_cuda.hpp"
#include "transformer_block.hpp"
#include "working_copy.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {
namespace {

std::string check_model(const KernelsBinding& b) {
  const ModelSpec& m = b.model;
  auto positive = [](int v) { return v > 0; };
  if ((b.working == DType::F16) != bool(PTDP_FUSED_FP16))
    return std::string("the ") + kActName + " variant was bound for precision.params = \"" +
           (b.working == DType::F16 ? "fp16" : "bf16") + "\"";
  if (b.tp_size < 1) return "tp_size " + std::to_string(b.tp_size) + " must be at least 1";
  if (b.tp_rank < 0 || b.tp_rank >= b.tp_size)
    return "tp_rank " + std::to_string(b.tp_rank) + " is outside [0, " + std::to_string(b.tp_size) + ")";
  if (b.tp_size > 1 && b.tp == nullptr) return "tp_size is " + std::to_string(b.tp_size) + " but no communicator was given";
  if (b.tp_size > 1 && (b.tp->size() != b.tp_size || b.tp->rank() != b.tp_rank))
    return "the communicator " + b.tp->name() + " is rank " + std::to_string(b.tp->rank()) + " of " +
           std::to_string(b.tp->size()) + ", but the binding says rank " + std::to_string(b.tp_rank) + " of " +
           std::to_string(b.tp_size);
  if (b.tp_size > 1 && !(b.tp->memory_kinds() & memory_bit(MemoryKind::Cuda)))
    return "the communicator " + b.tp->name() + " cannot move CUDA memory";
  if (!positive(m.layers) || !positive(m.hidden) || !positive(m.heads) || !positive(m.seq_len) ||
      !positive(m.vocab) || !positive(m.ffn_hidden) || !positive(m.micro_batch))
    return "layers, hidden, heads, seq_len, vocab, ffn_hidden and micro_batch must be positive";
  if (m.hidden % m.heads != 0)
    return "hidden " + std::to_string(m.hidden) + " is not a multiple of heads " + std::to_string(m.heads);
  if (m.heads % b.tp_size != 0)
    return "heads " + std::to_string(m.heads) + " is not a multiple of the tensor-parallel size " +
           std::to_string(b.tp_size);
  if (m.ffn_hidden % b.tp_size != 0)
    return "ffn_hidden " + std::to_string(m.ffn_hidden) + " is not a multiple of the tensor-parallel size " +
           std::to_string(b.tp_size);
  if (m.padded_vocab < m.vocab || m.padded_vocab % b.tp_size != 0)
    return "padded_vocab " + std::to_string(m.padded_vocab) + " must be at least vocab " + std::to_string(m.vocab) +
           " and a multiple of the tensor-parallel size " + std::to_string(b.tp_size);
  if (!(m.dropout >= 0.0f && m.dropout < 1.0f)) return "dropout " + std::to_string(m.dropout) + " is outside [0, 1)";
  if (!(m.layernorm_eps > 0.0f)) return "layernorm_eps must be positive";
  if (int64_t(m.seq_len) * m.micro_batch > (int64_t(1) << 31) - 1)
    return "seq_len * micro_batch exceeds the 32-bit token index";
  if (b.fp8.enabled) {
    // cuBLASLt's FP8 GEMMs need every summed and every output dimension a multiple of 16: the
    // tokens (the weight gradients sum over them), the hidden size, and this rank's widths.
    const int64_t tokens = int64_t(m.seq_len) * m.micro_batch;
    const int64_t width = m.hidden / b.tp_size, ffn = m.ffn_hidden / b.tp_size;
    if (tokens % 16 != 0 || m.hidden % 16 != 0 || width % 16 != 0 || ffn % 16 != 0)
      return "FP8 GEMMs need seq_len * micro_batch (" + std::to_string(tokens) + "), hidden (" +
             std::to_string(m.hidden) + "), hidden / t (" + std::to_string(width) + ") and ffn_hidden / t (" +
             std::to_string(ffn) + ") to be multiples of 16";
  }
  if (b.sequence_parallel && b.model.seq_len % b.tp_size != 0)
    return "sequence parallelism needs seq_len (" + std::to_string(b.model.seq_len) +
           ") to be a multiple of the tensor-parallel size " + std::to_string(b.tp_size);
  return "";
}

}  // namespace

KernelsFused::KernelsFused(const PluginContext& context) : log_(context) {
  // The schema (plugin_entry.cpp) is the one source of each option's default and of the choices
  // a string may take: the host validated this table against it.
  PTDP_CHECK(context.config, "kernels-fused: made without its configuration table");
  const ConfigView& c = *context.config;
  options_.attention = c.get_string("attention") == "flash" ? AttentionPath::Flash : AttentionPath::Unfused;
  options_.gemm_workspace_bytes = size_t(c.get_int("gemm_workspace_mb")) << 20;
  options_.gemm_workspace_scope =
      c.get_string("gemm_workspace_scope") == "all" ? GemmWorkspaceScope::All : GemmWorkspaceScope::GradientEpilogues;
  options_.gemm_autotune = c.get_bool("gemm_autotune");
  options_.gelu_epilogue = c.get_bool("gelu_epilogue");
  options_.bias_grad_epilogue = c.get_bool("bias_grad_epilogue");
  options_.fused_layer_norm_backward = c.get_bool("fused_layer_norm_backward");
  options_.fused_residual_layer_norm = c.get_bool("fused_residual_layer_norm");
  options_.layer_norm_bias_grads = c.get_bool("layer_norm_bias_grads");
  options_.one_pass_cross_entropy = c.get_bool("one_pass_cross_entropy");
  options_.first_backward_writes_gradients = c.get_bool("first_backward_writes_gradients");
  options_.fp8_forward_fast_accumulation = c.get_bool("fp8_forward_fast_accumulation");
  options_.fp8_gradient_fast_accumulation = c.get_bool("fp8_gradient_fast_accumulation");
  if (options_.attention == AttentionPath::Flash) require_flash_attention_built();
}

KernelsFused::~KernelsFused() {
  // What the run's layers took of the device, for the log (docs/memory.md compares it with the
  // planner's activation memory).
  if (backend_) {
    const std::string memory = backend_->memory_report();
    if (!memory.empty()) log_.write(LogLevel::Info, memory);
  }
  // The backend goes now unless a layer still holds it; either way its teardown failures reach the
  // host's log only while this object lives.
  backend_.reset();
  log_.close();
}

void KernelsFused::bind(const KernelsBinding& binding) {
  if (backend_) throw Error("kernels-fused: bind() was already called");
  const std::string problem = check_model(binding);
  if (!problem.empty()) throw Error("kernels-fused: cannot bind: " + problem);
  int devices = 0;
  PTDP_CALL(cudaGetDeviceCount(&devices));
  if (binding.device_index < 0 || binding.device_index >= devices)
    throw Error("kernels-fused: device_index " + std::to_string(binding.device_index) + " but this process sees " +
                std::to_string(devices) + " CUDA device(s)");
  device_index_ = binding.device_index;
  backend_ = std::make_shared<Backend>(binding, options_, log_);
  log_.write(LogLevel::Info, "kernels-fused: device " + std::to_string(device_index_) + ", " + kActName +
                                 " activations, attention " +
                                 backend_->attention().name() + ", GEMM workspace for " +
                                 (options_.gemm_workspace_scope == GemmWorkspaceScope::All ? "all GEMMs"
                                                                                            : "gradient epilogues") +
                                 ", GEMM autotuning " +
                                 (options_.gemm_autotune ? "on" : "off") + ", GeLU epilogue " +
                                 (options_.gelu_epilogue ? "on" : "off") + ", bias-gradient epilogue " +
                                 (options_.bias_grad_epilogue ? "on" : "off") + ", one-launch LayerNorm backward " +
                                 (options_.fused_layer_norm_backward ? "on" : "off") + ", residual add + LayerNorm " +
                                 (options_.fused_residual_layer_norm ? "fused" : "unfused") + ", bias gradients in LayerNorm " +
                                 (options_.layer_norm_bias_grads ? "on" : "off") + ", one-pass cross entropy " +
                                 (options_.one_pass_cross_entropy ? "on" : "off") +
                                 ", first backward writes the weight gradients " +
                                 (options_.first_backward_writes_gradients ? "on" : "off") + ", tensor-parallel rank " +
                                 std::to_string(binding.tp_rank) + " of " + std::to_string(binding.tp_size) +
                                 (backend_->rows().sequence_parallel() ? ", sequence-parallel" : ""));
}

uint32_t KernelsFused::precisions() const {
  // FP8 tensor cores came with compute capability 8.9 (Ada) and 9.0 (Hopper). Every GPU this
  // process sees must have them, since the core has not yet placed the rank on one; attributes are
  // read without creating a context.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 0;
  const uint32_t fp16 = precision_bit(PrecisionSupport::Fp16);
  for (int d = 0; d < devices; ++d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess)
      return fp16;
    if (major * 10 + minor < 89) return fp16;
  }
  return fp16 | precision_bit(PrecisionSupport::Fp8Hybrid);
}

uint32_t KernelsFused::activation_memory_features() const {
  return feature_bit(ActivationMemoryFeature::SequenceParallel) | feature_bit(ActivationMemoryFeature::SelectiveRecompute);
}

int KernelsFused::device_count() const {
  int devices = 0;
  // No device: 0 rather than an error, so the core can say what it needs in its own words.
  return cudaGetDeviceCount(&devices) == cudaSuccess ? devices : 0;
}

std::shared_ptr<EmbeddingLayer> KernelsFused::make_embedding() { return std::make_shared<FusedEmbedding>(bound()); }

std::shared_ptr<TransformerBlock> KernelsFused::make_block(int layer_index) {
  auto& b = bound();
  if (layer_index < 0 || layer_index >= b->model().layers)
    throw Error("kernels-fused: make_block(" + std::to_string(layer_index) + "): the model has " +
                std::to_string(b->model().layers) + " layers");
  return std::make_shared<FusedTransformerBlock>(b, layer_index);
}

std::shared_ptr<HeadLayer> KernelsFused::make_head(EmbeddingLayer* tied) {
  auto& b = bound();
  std::shared_ptr<Parameter> word;
  if (tied) {
    auto* embedding = dynamic_cast<FusedEmbedding*>(tied);
    if (!embedding || embedding->backend() != b.get())
      throw Error("kernels-fused: make_head: the tied embedding layer was not made by this kernels-fused instance");
    word = embedding->word();
  }
  return std::make_shared<FusedHead>(b, std::move(word));
}

OwnedTensor KernelsFused::allocate(const std::vector<int64_t>& shape, DType dtype) {
  auto& b = bound();
  for (int64_t d : shape)
    if (d < 0) throw Error("kernels-fused: allocate " + shape_string(shape) + ": negative dimension");
  OwnedTensor t;
  t.view = b->device_tensor(nullptr, dtype, shape);
  b->activate();
  t.storage = b->arena().allocate(t.view.bytes());
  t.view.data = t.storage.get();
  PTDP_CALL(cudaMemsetAsync(t.view.data, 0, t.view.bytes(), b->stream()));
  return t;
}

void KernelsFused::copy_from_host(Tensor dst, const void* src) {
  auto& b = bound();
  expect_device(dst, "copy_from_host: dst");
  b->activate();
  PTDP_CALL(cudaMemcpyAsync(dst.data, src, dst.bytes(), cudaMemcpyHostToDevice, b->stream()));
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
}

void KernelsFused::copy_to_host(void* dst, const Tensor& src) {
  auto& b = bound();
  expect_device(src, "copy_to_host: src");
  b->activate();
  PTDP_CALL(cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, b->stream()));
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
}

void KernelsFused::copy(Tensor dst, const Tensor& src) {
  auto& b = bound();
  if (dst.dtype != src.dtype || dst.numel() != src.numel())
    throw Error("kernels-fused: copy from " + std::string(dtype_name(src.dtype)) + " " + shape_string(src.shape) +
                " to " + dtype_name(dst.dtype) + " " + shape_string(dst.shape) + ": dtype or size differ");
  b->activate();
  PTDP_CALL(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDefault, b->stream()));
  if (dst.device.kind == MemoryKind::Host || src.device.kind == MemoryKind::Host)
    PTDP_CALL(cudaStreamSynchronize(b->stream()));
}

void KernelsFused::fill_zero(Tensor t) {
  auto& b = bound();
  if (t.device.kind == MemoryKind::Host) {
    PTDP_CALL(cudaStreamSynchronize(b->stream()));
    std::memset(t.data, 0, t.bytes());
    return;
  }
  b->activate();
  PTDP_CALL(cudaMemsetAsync(t.data, 0, t.bytes(), b->stream()));
}

namespace {

std::vector<SquareSumTensor> square_sum_list(const std::vector<Tensor>& tensors,
                                             const std::function<void(const Tensor&)>& expect_device) {
  std::vector<SquareSumTensor> list;
  for (const Tensor& t : tensors) {
    if (t.dtype != DType::F32) throw Error("kernels-fused: sum_squares takes f32 tensors, got " +
                                           std::string(dtype_name(t.dtype)) + " " + shape_string(t.shape));
    expect_device(t);
    if (t.numel() > 0) list.push_back(SquareSumTensor{t.as<const float>(), t.numel()});
  }
  return list;
}

}  // namespace

double KernelsFused::sum_squares(const std::vector<Tensor>& tensors) {
  auto& b = bound();
  const auto list = square_sum_list(tensors, [&](const Tensor& t) { expect_device(t, "sum_squares: tensor"); });
  b->activate();
  const MultiTensorMetadata meta = pack_multi_tensor(list);
  const void* device_meta = meta.chunk_count ? b->metadata().device_copy(meta.bytes) : nullptr;
  auto result = allocate_buffer<double>(b->arena(), 1);
  sum_of_squares(device_meta, meta.chunks_offset, meta.chunk_count, result.get(), b->kernel_context());
  double host = 0.0;
  PTDP_CALL(cudaMemcpyAsync(&host, result.get(), sizeof(double), cudaMemcpyDeviceToHost, b->stream()));
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
  return host;
}

void KernelsFused::sum_squares_into(const std::vector<Tensor>& tensors, Tensor out) {
  auto& b = bound();
  const auto list = square_sum_list(tensors, [&](const Tensor& t) { expect_device(t, "sum_squares_into: tensor"); });
  b->expect(out, DType::F32, MemoryKind::Cuda, {1}, "sum_squares_into: out");
  b->activate();
  const MultiTensorMetadata meta = pack_multi_tensor(list);
  const void* device_meta = meta.chunk_count ? b->metadata().device_copy(meta.bytes) : nullptr;
  auto result = allocate_buffer<double>(b->arena(), 1);  // queued work holds it: the arena's order
  sum_of_squares(device_meta, meta.chunks_offset, meta.chunk_count, result.get(), b->kernel_context(),
                 out.as<float>());
}

void KernelsFused::adam_step(const std::vector<ParamRef>& params, const AdamStep& step) {
  auto& b = bound();
  if (step.step < 1) throw Error("kernels-fused: adam_step: step " + std::to_string(step.step) + " must be >= 1");
  std::vector<AdamTensor> list;
  int with_fp8 = 0;
  for (const ParamRef& p : params) {
    for (const Tensor* t : {&p.master, &p.grad, &p.exp_avg, &p.exp_avg_sq}) {
      if (t->dtype != DType::F32 || t->numel() != p.master.numel())
        throw Error("kernels-fused: adam_step: parameter " + p.name + " needs f32 master, grad and moments of " +
                    std::to_string(p.master.numel()) + " elements");
      expect_device(*t, "adam_step: parameter " + p.name);
    }
    if (p.master.numel() == 0) continue;
    // An entry may be a range of a parameter (a distributed optimizer's shard): its working
    // copy is the same range of the parameter's.
    auto owner = b->parameter_holding(p.master.data);
    act_t* working = owner && owner->working() ? owner->working() + (p.master.as<float>() - owner->master()) : nullptr;
    if (owner) owner->values_changed();
    // The FP8 copy only of a whole parameter: a shard's step makes part of the values.
    Fp8UpdateCopy* fp8 = owner && p.master.data == owner->master() && p.master.numel() == owner->numel()
                             ? owner->fp8_update_copy()
                             : nullptr;
    if (fp8) {
      fp8->made_from = owner->values_version();
      ++with_fp8;
    }
    list.push_back(AdamTensor{p.master.as<float>(), p.grad.as<const float>(), p.exp_avg.as<float>(),
                              p.exp_avg_sq.as<float>(), working, fp8 ? fp8->data : nullptr,
                              fp8 ? fp8->scale : nullptr, fp8 ? fp8->amax : nullptr, fp8 ? fp8->scale_inv : nullptr,
                              p.master.numel(), p.weight_decay ? step.weight_decay : 0.0f});
  }
  if (list.empty()) return;
  AdamHyper hyper;
  hyper.lr = step.lr;
  hyper.beta1 = step.beta1;
  hyper.beta2 = step.beta2;
  hyper.eps = step.eps;
  hyper.grad_scale = step.grad_scale;
  if (!(step.loss_scale > 0.0f) || !std::isfinite(step.loss_scale))
    throw Error("kernels-fused: adam_step: loss_scale " + std::to_string(step.loss_scale) +
                " must be positive and finite");
  hyper.loss_scale = step.loss_scale;
  hyper.bias_correction1 = float(1.0 - std::pow(double(step.beta1), double(step.step)));
  hyper.bias_correction2 = float(1.0 - std::pow(double(step.beta2), double(step.step)));
  if (step.grad_sum_squares.data) {
    b->expect(step.grad_sum_squares, DType::F32, MemoryKind::Cuda, {1}, "adam_step: grad_sum_squares");
    hyper.grad_sum_squares = step.grad_sum_squares.as<const float>();
    hyper.max_grad_norm = step.max_grad_norm;
  }
  b->activate();
  const MultiTensorMetadata meta = pack_multi_tensor(list);
  ::ptdp::fused::adam_step(b->metadata().device_copy(meta.bytes), meta.chunks_offset, meta.chunk_count,
                           int(list.size()), with_fp8, hyper, b->kernel_context());
}

void KernelsFused::place_parameters(const std::vector<ParamRef>& params) {
  auto& b = bound();
  std::vector<std::pair<std::shared_ptr<Parameter>, const ParamRef*>> found;
  for (const ParamRef& p : params) {
    // The list names parameters as parameters() gave them; each is found by name.
    std::shared_ptr<Parameter> owner = b->parameter_named(p.name, "place_parameters");
    const auto& shape = owner->spec().local_shape;
    if (p.master.data) b->expect(p.master, DType::F32, MemoryKind::Cuda, shape, "place_parameters: " + p.name + " master");
    else if (p.master.shape != shape)
      throw Error("kernels-fused: place_parameters: " + p.name + " placed with an empty master of shape " +
                  shape_string(p.master.shape) + ", expected " + shape_string(shape));
    b->expect(p.grad, DType::F32, MemoryKind::Cuda, shape, "place_parameters: " + p.name + " grad");
    found.emplace_back(owner, &p);
  }
  b->activate();
  for (auto& [owner, p] : found) b->place(owner, p->master.as<float>(), p->grad.as<float>());
  // The parameters' own blocks would otherwise stay cached in the arena, holding device memory
  // that nothing of this size asks for again.
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
  b->arena().release_cached();
}

void KernelsFused::params_updated() {
  auto& b = bound();
  std::vector<CastTensor> list;
  for (const auto& p : b->parameters()) {
    if (p->placed_without_master()) continue;
    p->values_changed();
    if (p->working() && p->numel() > 0) list.push_back(CastTensor{p->master(), p->working(), p->numel(), nullptr});
  }
  if (list.empty()) return;
  b->activate();
  const MultiTensorMetadata meta = pack_multi_tensor(list);
  refresh_working_copies(b->metadata().device_copy(meta.bytes), meta.chunks_offset, meta.chunk_count,
                         b->kernel_context());
}

void KernelsFused::set_weights(const std::vector<ParamRef>& params) {
  auto& b = bound();
  std::vector<CastTensor> list;
  for (const ParamRef& p : params) {
    std::shared_ptr<Parameter> owner = b->parameter_named(p.name, "set_weights");
    if (!owner->placed_without_master())
      throw Error("kernels-fused: set_weights: " + p.name + " was not placed with an empty master");
    b->expect(p.master, DType::F32, MemoryKind::Cuda, owner->spec().local_shape, "set_weights: " + p.name);
    // The working copy and the fp32 values the kernels read, in one pass over the given values.
    if (owner->numel() > 0 && (owner->working() || owner->master()))
      list.push_back(CastTensor{p.master.as<const float>(), owner->working(), owner->numel(), owner->master()});
    owner->values_changed();
  }
  if (list.empty()) return;
  b->activate();
  const MultiTensorMetadata meta = pack_multi_tensor(list);
  refresh_working_copies(b->metadata().device_copy(meta.bytes), meta.chunks_offset, meta.chunk_count,
                         b->kernel_context());
}

void KernelsFused::release_cached_memory() {
  auto& b = bound();
  b->activate();
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
  b->arena().release_cached();
}

void KernelsFused::synchronize() {
  auto& b = bound();
  b->activate();
  PTDP_CALL(cudaStreamSynchronize(b->stream()));
}

void* KernelsFused::stream() { return bound()->stream(); }

void* KernelsFused::side_stream() { return bound()->side().stream(); }

void KernelsFused::side_waits_for_compute() {
  auto& b = bound();
  b->activate();
  b->side().waits_for_compute();
}

void KernelsFused::compute_waits_for_side() {
  auto& b = bound();
  b->activate();
  b->side().compute_waits();
}

void* KernelsFused::transfer_stream() { return bound()->transfer().stream(); }

void KernelsFused::transfer_waits_for_compute() {
  auto& b = bound();
  b->activate();
  b->transfer().waits_for_compute();
}

void KernelsFused::compute_waits_for_transfer() {
  auto& b = bound();
  b->activate();
  b->transfer().compute_waits();
}

std::shared_ptr<Backend>& KernelsFused::bound() {
  if (!backend_) throw Error("kernels-fused: bind() must be called before anything else");
  return backend_;
}

void KernelsFused::expect_device(const Tensor& t, const std::string& what) const {
  if (t.device.kind != MemoryKind::Cuda || t.device.index != device_index_ || (t.data == nullptr && t.numel() > 0))
    throw Error("kernels-fused: " + what + " must be memory of CUDA device " + std::to_string(device_index_) +
                ", got " + (t.device.kind == MemoryKind::Host ? std::string("host memory")
                                                              : "CUDA device " + std::to_string(t.device.index)));
}

std::unique_ptr<LayerKernels> make_kernels_fused(const PluginContext& context) {
  return std::make_unique<KernelsFused>(context);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
