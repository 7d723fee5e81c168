#pragma once
// Backend: what every layer of one kernels-fused instance shares once it is bound to a device:
// the stream everything is enqueued on (and the side stream of the core's reduction), the arena, the GEMM and attention engines, the
// tensor-parallel group, and the registry of parameters whose act_t working copies it refreshes.
#include <cuda_runtime.h>

#include <memory>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "arena.hpp"
#include "attention.hpp"
#include "dropout.hpp"
#include "gemm.hpp"
#include "host_upload.hpp"
#include "kernel_context.hpp"
#include "multi_tensor.hpp"
#include "parameter.hpp"
#include "side_stream.hpp"
#include "tensor_parallel_rows.hpp"
#include "ptdp/activation_recompute.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/layer_kernels.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

enum class AttentionPath { Flash, Unfused };

// The plugin's options (README.md's table); each fusion can be turned off to measure what it gives.
// KernelsFused sets every field from the plugin's schema (plugin_entry.cpp), the one source of
// their defaults.
struct BackendOptions {
  AttentionPath attention;
  size_t gemm_workspace_bytes;
  GemmWorkspaceScope gemm_workspace_scope;  // which GEMMs are offered it
  bool gemm_autotune;             // each GEMM shape's cuBLASLt algorithm timed among the heuristic's first
  bool gelu_epilogue;             // FC1 bias + GeLU and its backward in cuBLASLt epilogues
  bool bias_grad_epilogue;        // bias gradients from the weight-gradient GEMMs' epilogues (BGRADB)
  bool fused_layer_norm_backward;  // LayerNorm's backward in one launch
  bool fused_residual_layer_norm;  // the attention half's bias + dropout + add with LayerNorm 2
  bool layer_norm_bias_grads;     // without dropout, the row-parallel biases' gradients summed by LayerNorm's backward
  bool one_pass_cross_entropy;    // the loss and its gradient in one kernel in forward (t = 1)
  bool first_backward_writes_gradients;  // weight-gradient GEMMs at beta 0 on the step's first backward
  // Under precision.fp8: cuBLASLt's fast accumulation for the forward GEMMs, and for the gradients'.
  bool fp8_forward_fast_accumulation;
  bool fp8_gradient_fast_accumulation;
};

class Backend {
 public:
  // `log` hears of what fails when the backend and its parts go.
  Backend(const KernelsBinding& binding, const BackendOptions& options, PluginLog log);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const ModelSpec& model() const { return model_; }
  const Fp8Recipe& fp8() const { return fp8_; }
  // Whether a block's forward(save=true) recomputes `module` in its backward instead of keeping it
  // (KernelsBinding::recompute_modules, parallel.recompute = "selective").
  bool recomputes(RecomputeModule module) const { return (recompute_modules_ & module_bit(module)) != 0; }
  const BackendOptions& options() const { return options_; }
  int tp_rank() const { return tp_rank_; }
  int tp_size() const { return tp_size_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  SideStream& side() { return *side_; }
  // The stream of the pipeline transfers the core posts ahead (LayerKernels::transfer_stream).
  SideStream& transfer() { return *transfer_; }
  const KernelContext& kernel_context() const { return kernel_context_; }
  DeviceArena& arena() { return *arena_; }
  HostUpload& upload() { return *upload_; }
  MetadataCache& metadata() { return *metadata_; }
  Gemm& gemm() { return *gemm_; }
  Attention& attention() { return *attention_; }
  // The rows each layer holds and where they cross the tensor-parallel group (sequence parallelism).
  TensorParallelRows& rows() { return *rows_; }
  const TensorParallelRows& rows() const { return *rows_; }
  const PluginLog& log() const { return log_; }

  // Makes this backend's device current for the calling thread.
  void activate() const;

  // Called by every layer's forward: the first call notes what the arena holds before any
  // activation (parameters, gradients, optimizer state, the core's buffers) and starts its peak
  // from there, so that memory_report() can tell the activations' share.
  void note_layer_forward();
  // One line: the arena's bytes before the first forward and its peak since.
  std::string memory_report() const;

  // Sum (or max) over the tensor-parallel group, in place on the stream; nothing when it is one rank.
  void all_reduce(void* data, DType dtype, int64_t count, ReduceOp op = ReduceOp::Sum);

  // A dropout site over this rank's rows between layers (its share of the sequence under
  // sequence parallelism).
  DropoutSite dropout_site(const MicroBatch& mb, int site) const;
  Tensor device_tensor(void* data, DType dtype, std::vector<int64_t> shape) const;

  std::shared_ptr<Parameter> make_parameter(const ParameterSpec& spec);
  // Live parameters (layers that were dropped take theirs with them).
  std::vector<std::shared_ptr<Parameter>> parameters();
  // The one live parameter named `name`, from an index kept as parameters are made (set_weights
  // asks for every parameter of a bucket, every step); `who` names the call in the error when
  // there is none or two.
  std::shared_ptr<Parameter> parameter_named(const std::string& name, const std::string& who);
  // The parameter whose master weights hold `address` (a whole master or a range of one).
  std::shared_ptr<Parameter> parameter_holding(const void* address);
  // Moves a parameter's master and gradient to the core's memory (place_parameters); a null
  // master: the core keeps none.
  void place(const std::shared_ptr<Parameter>& parameter, float* master, float* grad);

  // Checks a tensor passed in: dtype, memory and shape, naming the layer and argument when wrong.
  void expect(const Tensor& t, DType dtype, MemoryKind memory, const std::vector<int64_t>& shape,
              const std::string& what) const;

 private:
  ModelSpec model_;
  uint32_t recompute_modules_ = 0;
  bool forward_seen_ = false;
  size_t before_forward_ = 0;
  Fp8Recipe fp8_;
  BackendOptions options_;
  PluginLog log_;
  int tp_rank_ = 0;
  int tp_size_ = 1;
  Communicator* tp_ = nullptr;
  int device_ = 0;
  bool core_places_parameters_ = false;  // KernelsBinding::core_places_parameters
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<SideStream> side_;
  std::unique_ptr<SideStream> transfer_;
  std::shared_ptr<DeviceArena> arena_;
  std::unique_ptr<HostUpload> upload_;
  std::unique_ptr<MetadataCache> metadata_;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<Attention> attention_;
  std::unique_ptr<TensorParallelRows> rows_;
  KernelContext kernel_context_;
  std::vector<std::weak_ptr<Parameter>> parameters_;
  std::map<const char*, std::weak_ptr<Parameter>> by_master_;  // by the master's first byte
  std::unordered_map<std::string, std::vector<std::weak_ptr<Parameter>>> by_name_;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
