#include "backend.hpp"

#include <cstdio>

#include "attention_unfused.hpp"
#include "flash_attention.hpp"
#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

Backend::Backend(const KernelsBinding& binding, const BackendOptions& options, PluginLog log)
    : model_(binding.model),
      recompute_modules_(binding.recompute_modules),
      fp8_(binding.fp8),
      options_(options),
      log_(std::move(log)),
      tp_rank_(binding.tp_rank),
      tp_size_(binding.tp_size),
      tp_(binding.tp),
      device_(binding.device_index),
      core_places_parameters_(binding.core_places_parameters) {
  PTDP_CALL(cudaSetDevice(device_));
  PTDP_CALL(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    side_ = std::make_unique<SideStream>(stream_, log_);
    transfer_ = std::make_unique<SideStream>(stream_, log_);
    arena_ = DeviceArena::create(device_, log_);
    upload_ = std::make_unique<HostUpload>(stream_, log_);
    metadata_ = std::make_unique<MetadataCache>(*arena_, *upload_);
    int sm_count = 0;
    PTDP_CALL(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device_));
    kernel_context_ = KernelContext{stream_, arena_.get(), sm_count};
    kernel_context_.fused_layer_norm_backward = options.fused_layer_norm_backward;
    gemm_ = std::make_unique<Gemm>(stream_, arena_, options.gemm_workspace_bytes, options.gemm_autotune, log_,
                                   options.gemm_workspace_scope);

    AttentionShape shape;
    shape.seq = model_.seq_len;
    shape.batch = model_.micro_batch;
    shape.heads = model_.heads / tp_size_;
    shape.head_dim = model_.hidden / model_.heads;
    if (options.attention == AttentionPath::Flash)
      attention_ = make_flash_attention(shape, kernel_context_, log_);
    else
      attention_ = std::make_unique<UnfusedAttention>(shape, *gemm_, kernel_context_);
    if (tp_size_ > 1) tp_->bind_stream(stream_);
    rows_ = std::make_unique<TensorParallelRows>(tp_size_ > 1 ? tp_ : nullptr, binding.sequence_parallel, model_, device_,
                                                 *arena_);
  } catch (...) {
    // The destructor does not run for a half-built backend.
    rows_.reset();
    attention_.reset();
    gemm_.reset();
    metadata_.reset();
    upload_.reset();
    transfer_.reset();
    side_.reset();
    TeardownFailures failures;
    PTDP_TEARDOWN_CALL(failures, cudaStreamDestroy(stream_));
    log_.write_failures("kernels-fused: after a failed bind", failures);
    throw;
  }
}

Backend::~Backend() {
  TeardownFailures failures;
  // What the stream still runs may use the parts released below; a fault it hit shows here.
  if (stream_) PTDP_TEARDOWN_CALL(failures, cudaStreamSynchronize(stream_));
  rows_.reset();
  attention_.reset();
  gemm_.reset();
  metadata_.reset();
  upload_.reset();
  side_.reset();
  if (stream_) PTDP_TEARDOWN_CALL(failures, cudaStreamDestroy(stream_));
  log_.write_failures("kernels-fused: tearing down device " + std::to_string(device_), failures);
}

void Backend::activate() const { PTDP_CALL(cudaSetDevice(device_)); }

void Backend::note_layer_forward() {
  if (forward_seen_) return;
  forward_seen_ = true;
  before_forward_ = arena_->bytes_in_use();
  arena_->reset_peak();
}

std::string Backend::memory_report() const {
  if (!forward_seen_) return "";
  const double gib = double(size_t(1) << 30), before = double(before_forward_) / gib;
  const double peak = double(arena_->peak_bytes_in_use()) / gib;
  char line[320];
  std::snprintf(line, sizeof line,
                "kernels-fused: device %d memory through its allocator: %.2f GiB before the first forward "
                "(parameters, gradients, optimizer state, buffers), peak %.2f GiB: activations and workspace at "
                "most %.2f GiB",
                device_, before, peak, peak - before);
  return line;
}

void Backend::all_reduce(void* data, DType dtype, int64_t count, ReduceOp op) {
  if (tp_size_ == 1 || count == 0) return;
  tp_->all_reduce(device_tensor(data, dtype, {count}), op);
}

DropoutSite Backend::dropout_site(const MicroBatch& mb, int site) const {
  DropoutSite d;
  d.seed = model_.seed;
  d.step = mb.step;
  d.site = site;
  d.p = mb.training ? model_.dropout : 0.0f;  // evaluation runs without dropout
  d.first_sample = mb.first_sample;
  d.first_row = rows_->first_local_row();
  d.micro_batch = model_.micro_batch;
  d.seq_len = model_.seq_len;
  d.hidden = model_.hidden;
  return d;
}

Tensor Backend::device_tensor(void* data, DType dtype, std::vector<int64_t> shape) const {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.device = Device{MemoryKind::Cuda, device_};
  return t;
}

std::shared_ptr<Parameter> Backend::make_parameter(const ParameterSpec& spec) {
  auto p = std::make_shared<Parameter>(spec, *arena_, device_, stream_, !core_places_parameters_);
  parameters_.push_back(p);
  by_master_[reinterpret_cast<const char*>(p->master())] = p;
  by_name_[spec.name].push_back(p);
  return p;
}

std::shared_ptr<Parameter> Backend::parameter_named(const std::string& name, const std::string& who) {
  std::shared_ptr<Parameter> owner;
  auto found = by_name_.find(name);
  if (found != by_name_.end())
    for (const auto& weak : found->second)
      if (auto candidate = weak.lock()) {
        if (owner) throw Error("kernels-fused: " + who + ": two parameters are named '" + name + "'");
        owner = std::move(candidate);
      }
  if (!owner) throw Error("kernels-fused: " + who + ": no parameter named '" + name + "'");
  return owner;
}

std::vector<std::shared_ptr<Parameter>> Backend::parameters() {
  std::vector<std::shared_ptr<Parameter>> live;
  std::vector<std::weak_ptr<Parameter>> kept;
  for (auto& weak : parameters_) {
    if (auto p = weak.lock()) {
      live.push_back(p);
      kept.push_back(weak);
    }
  }
  parameters_.swap(kept);
  for (auto it = by_master_.begin(); it != by_master_.end();)
    it = it->second.expired() ? by_master_.erase(it) : std::next(it);
  for (auto it = by_name_.begin(); it != by_name_.end();) {
    std::erase_if(it->second, [](const std::weak_ptr<Parameter>& weak) { return weak.expired(); });
    it = it->second.empty() ? by_name_.erase(it) : std::next(it);
  }
  return live;
}

std::shared_ptr<Parameter> Backend::parameter_holding(const void* address) {
  const char* a = static_cast<const char*>(address);
  auto it = by_master_.upper_bound(a);
  if (it == by_master_.begin()) return nullptr;
  auto p = std::prev(it)->second.lock();
  if (!p || a >= reinterpret_cast<const char*>(p->master() + p->numel())) return nullptr;
  return p;
}

void Backend::place(const std::shared_ptr<Parameter>& parameter, float* master, float* grad) {
  by_master_.erase(reinterpret_cast<const char*>(parameter->master()));
  parameter->place(master, grad, *arena_, stream_);
  if (parameter->master()) by_master_[reinterpret_cast<const char*>(parameter->master())] = parameter;
}

void Backend::expect(const Tensor& t, DType dtype, MemoryKind memory, const std::vector<int64_t>& shape,
                     const std::string& what) const {
  const bool memory_ok = t.device.kind == memory && (memory == MemoryKind::Host || t.device.index == device_);
  if (t.dtype != dtype || !memory_ok || t.shape != shape || (t.data == nullptr && t.numel() > 0))
    throw Error("kernels-fused: " + what + " must be " + dtype_name(dtype) + " " + shape_string(shape) + " in " +
                (memory == MemoryKind::Host ? std::string("host memory")
                                            : "memory of CUDA device " + std::to_string(device_)) +
                ", got " + dtype_name(t.dtype) + " " + shape_string(t.shape) + " in " +
                (t.device.kind == MemoryKind::Host ? std::string("host memory")
                                                   : "memory of CUDA device " + std::to_string(t.device.index)) +
                (t.data == nullptr ? " (no data)" : ""));
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
