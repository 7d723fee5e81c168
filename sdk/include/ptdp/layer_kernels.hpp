#pragma once
// LayerKernels: a compute backend bound to one device that makes the layers of a GPT-2 model,
// tensor-parallel over the group it is given.
//
// The model (docs/architecture.md follows one step through it): token + learned position
// embedding, pre-LayerNorm blocks (causal multi-head attention, MLP of ffn_hidden with
// GeLU-tanh), final LayerNorm, logits from the tied word embedding, cross entropy.
// Activations are [s, b, h], row-major (h fastest); under sequence parallelism (KernelsBinding::
// sequence_parallel) those between layers are [s/t, b, h], this tensor rank's rows of the sequence.
// Tensor parallelism follows Megatron: QKV and FC1 column-parallel (heads split over the group),
// attention output and FC2 row-parallel, two all-reduces forward and two backward per block, or
// under sequence parallelism a reduce-scatter and an all-gather in their place (the regions of
// ptdp/tensor_parallel_regions.hpp);
// vocab-parallel embedding (rows split by vocab, ids outside the shard masked, all-reduce) and
// vocab-parallel cross entropy (max, sum-exp and target logit combined across the group).
// Dropout (probability ModelSpec::dropout) is applied to the embedding output and inside the two
// bias+dropout+residual-add of every block, with masks from counter_rng.hpp keyed by
// (seed, step, site, global sample, position, feature): the same under every layout.
//
// Lifetime of saved activations: forward(save=true) keeps what backward needs under the
// microbatch's slot (copying inputs if needed: callers may reuse `in` and `out` at once);
// backward consumes and frees it; release() frees it without a backward. forward(save=false)
// keeps nothing (the core recomputes such layers before their backward).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptdp/activation_recompute.hpp"
#include "ptdp/communicator.hpp"
#include "ptdp/fp8.hpp"
#include "ptdp/precision.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

struct ModelSpec {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int seq_len = 0;
  int vocab = 0;
  int padded_vocab = 0;  // vocab rounded up to a multiple of the TP size; padded ids never win
                         // a softmax (their logits are excluded) and never get a gradient
  int ffn_hidden = 0;    // 4 * hidden for GPT-2
  int micro_batch = 0;   // b
  float dropout = 0.0f;
  float layernorm_eps = 1e-5f;
  uint64_t seed = 0;     // dropout key
};

// One learnable tensor as this rank holds it. Names are global and layout-independent
// ("embedding.word", "layers.3.attn.qkv.weight", ...): the core initializes, synchronizes,
// clips and checkpoints by name and by the part of the global tensor this rank holds.
struct ParamRef {
  std::string name;
  std::vector<int64_t> global_shape;
  int shard_dim = -1;          // dimension split across the TP group, or -1 when every TP rank
                               // holds the whole tensor
  int64_t shard_offset = 0;    // start of this rank's part along shard_dim
  Tensor master;               // fp32 master weights, this rank's part
  Tensor grad;                 // fp32 gradient accumulator, same shape
  Tensor exp_avg;              // Adam first moment, fp32 (the backend's until place_parameters;
  Tensor exp_avg_sq;           // Adam second moment, fp32  the core's optimizer state after it)
  bool weight_decay = true;    // false for biases and LayerNorm parameters
};

// Identifies one microbatch in flight.
struct MicroBatch {
  int slot = 0;               // index within this pipeline's step (0 .. m-1): keys saved state
  int64_t step = 0;           // optimizer step, part of the dropout key
  int64_t first_sample = 0;   // global index (in the step's global batch) of its first sequence
  bool training = true;       // false for evaluation: no dropout
  // Since ABI 1.6. Set on the step's first backward of each model chunk: the gradients of every
  // transformer block's parameters hold stale values (for kernels of ABI 1.6 and later the core
  // no longer zeroes them each step, which on the GPU is a pass over every weight gradient), and
  // TransformerBlock::backward writes them instead of adding to them. The embedding and head
  // ignore it: the core still zeroes their gradients (the tied word matrix takes both layers'
  // sums).
  bool first_gradient = false;
};

class EmbeddingLayer {
 public:
  virtual ~EmbeddingLayer() = default;
  // "embedding.word" [padded_vocab, h] split on dim 0; "embedding.position" [s, h] whole.
  virtual std::vector<ParamRef> parameters() = 0;
  // tokens: I32 [s, b] in host memory. out: [s, b, h] activation on this backend's device.
  virtual void forward(const MicroBatch& mb, const Tensor& tokens, Tensor out, bool save) = 0;
  // Accumulates into the gradients.
  virtual void backward(const MicroBatch& mb, const Tensor& dout) = 0;
  virtual void release(int slot) = 0;
};

class TransformerBlock {
 public:
  virtual ~TransformerBlock() = default;
  // "layers.<i>.ln1.{weight,bias}", "layers.<i>.attn.qkv.{weight,bias}" (column-parallel),
  // "layers.<i>.attn.proj.{weight,bias}" (row-parallel weight), "layers.<i>.ln2.{weight,bias}",
  // "layers.<i>.mlp.fc1.{weight,bias}", "layers.<i>.mlp.fc2.{weight,bias}". Weights are
  // [out, in] as in torch.nn.Linear; the QKV rows are ordered [q | k | v], each by head.
  virtual std::vector<ParamRef> parameters() = 0;
  virtual void forward(const MicroBatch& mb, const Tensor& in, Tensor out, bool save) = 0;
  virtual void backward(const MicroBatch& mb, const Tensor& dout, Tensor din) = 0;
  // Since ABI 1.9, for a plugin whose LayerKernels::splits_backward() is true (the core calls them
  // for no other): backward() in two parts, as zero-bubble schedules run it. backward_input
  // writes din from the saved forward and keeps what the weight gradients need (the inputs of the
  // block's linear layers and LayerNorms and their output gradients) under mb.slot, touching no
  // parameter gradient; backward_weight, later, adds every parameter gradient from what was kept
  // (writing it where MicroBatch::first_gradient is set, as backward does) and frees it.
  // backward_input then backward_weight gives what backward gives; release(slot) also frees what
  // a backward_input kept.
  virtual void backward_input(const MicroBatch& mb, const Tensor& dout, Tensor din) {
    (void)mb;
    (void)dout;
    (void)din;
    throw Error("this kernels plugin does not split the backward");
  }
  virtual void backward_weight(const MicroBatch& mb) {
    (void)mb;
    throw Error("this kernels plugin does not split the backward");
  }
  virtual void release(int slot) = 0;
  // Since ABI 1.7, called once before the first forward when the binding's FP8 recipe is on and
  // runs this block in FP8 (Fp8Recipe::block_in_fp8). amax and scale are F32
  // [kFp8BlockLinears, kFp8Operands] in the kernels' memory, owned by the core: rows the linear
  // layers in kFp8BlockLinearNames' order, columns Fp8Operand. Every training forward and
  // backward raises amax to the largest |value| of each operand it casts (NaN-propagating, as
  // amax_update; under tensorwise scaling the tensor-parallel group's where the operand is split
  // over it, under delayed scaling the rank's own, which the core reduces); the core zeroes it
  // before each step and reads it after. Under delayed scaling the backend multiplies each operand
  // by its entry of scale, which the core writes between steps; under tensorwise scaling it
  // computes scales from amaxes and never reads scale. Evaluation (MicroBatch::training false)
  // records nothing. A backend that runs no FP8 keeps this default.
  virtual void bind_fp8_scaling(Tensor amax, Tensor scale) {
    (void)amax;
    (void)scale;
    throw Error("this kernels plugin runs no FP8 GEMMs");
  }
};

class HeadLayer {
 public:
  virtual ~HeadLayer() = default;
  // "head.ln.{weight,bias}", plus its own copy of "embedding.word" when not tied to a local
  // embedding layer (the core keeps the copies equal through the embedding group).
  virtual std::vector<ParamRef> parameters() = 0;
  // targets: I32 [s, b] in host memory. loss: F32 [1] on the device, receives the mean cross
  // entropy over the microbatch's s*b tokens.
  virtual void forward(const MicroBatch& mb, const Tensor& in, const Tensor& targets, Tensor loss,
                       bool save) = 0;
  // Backward of loss_scale * loss (the core passes 1/(m*d) so gradients are those of the
  // global-batch mean; under precision.params = "fp16" it passes S/(m*d) for the loss scale S, so
  // that small gradients stay above fp16's smallest values, and Adam divides S out again:
  // AdamStep::loss_scale).
  virtual void backward(const MicroBatch& mb, float loss_scale, Tensor din) = 0;
  virtual void release(int slot) = 0;
  // For generation: the logits of this rank's vocabulary rows, F32 [s, b, padded_vocab / t] on
  // the device (row r of the shard is vocabulary id tp_rank * padded_vocab / t + r; ids from
  // vocab up are padding, their values meaningless). Saves nothing. Since ABI 1.2.
  virtual void logits(const MicroBatch& mb, const Tensor& in, Tensor logits) = 0;
};

struct KernelsBinding {
  ModelSpec model;
  int tp_rank = 0;
  int tp_size = 1;
  Communicator* tp = nullptr;  // the tensor-parallel group (size tp_size); may be null if 1
  int device_index = 0;        // the device the core placed this rank on (accelerator backends)
  // Since ABI 1.7 (a host of an older minor refuses a 1.7 plugin, so it is always set when a
  // plugin reads it). Off unless the plugin declares PrecisionSupport::Fp8Hybrid.
  Fp8Recipe fp8 = {};
  // Since ABI 1.7. The type precision.params names: F32 ("fp32"), BF16 ("bf16") or F16 ("fp16").
  // It is what a GPU run would store the working weights of the GEMMs and the activations
  // between layers (and their gradients) in. A backend computes in activation_dtype() and may
  // ignore it, except that F16 is only ever set for a plugin that declares
  // PrecisionSupport::Fp16, which then holds those values in IEEE half (or rounds them to it,
  // as kernels-ref does on the CPU): a gradient beyond fp16's range becomes infinite there, and
  // the core skips the step.
  DType working = DType::F32;
  // Since ABI 1.8. parallel.sequence_parallel (only with tp_size > 1, and only for a plugin that
  // declares ActivationMemoryFeature::SequenceParallel): activations between layers, and the
  // embedding's output and the head's input, are [s/t, b, h]; the gradients of parameters with
  // shard_dim = -1 are this rank's rows' share only (the core sums them over the tensor group).
  bool sequence_parallel = false;
  // Since ABI 1.8. parallel.recompute = "selective": bits of RecomputeModule that a block's
  // forward(save=true) recomputes in its backward instead of keeping (only for a plugin that
  // declares ActivationMemoryFeature::SelectiveRecompute); 0 keeps everything.
  uint32_t recompute_modules = 0;
  // Since ABI 1.10. The core places every parameter (place_parameters) right after the layers
  // are made and keeps the Adam moments itself: the backend need hold nothing but a parameter's
  // master values until then, and its refs may leave exp_avg and exp_avg_sq empty. Without it
  // (a backend used on its own, as the conformance suite does) the backend keeps all four.
  // Why: whole-model master and gradient buffers are allocated while the layers' own memory is
  // still held, so every byte a backend holds per parameter before placement adds to the peak.
  bool core_places_parameters = false;
};

struct AdamStep {
  int64_t step = 1;          // 1-based, for bias correction
  float lr = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f; // decoupled (AdamW), only where ParamRef::weight_decay
  float grad_scale = 1.0f;   // gradients (divided by loss_scale) are multiplied by this first (clipping)
  // Since ABI 1.5. When set (F32 [1] in the kernels' memory: the sum of squares of every
  // gradient, from sum_squares_into and summed over the job), the backend reads the gradient norm
  // as its square root itself, in stream order, so the host need not wait for it: grad_scale is
  // then max_grad_norm / (norm + 1e-6) where max_grad_norm > 0 and norm > max_grad_norm, else 1
  // (the field above is ignored), and where the norm is not finite nothing is updated at all.
  Tensor grad_sum_squares;
  float max_grad_norm = 0.0f;
  // Since ABI 1.7. The loss scale the gradients carry (precision.params = "fp16"; 1 otherwise):
  // they, and grad_sum_squares (the sum of squares of the scaled gradients), are that many times
  // the true ones. The backend divides each gradient by it before clipping and Adam, and clips
  // with the true norm, sqrt(grad_sum_squares) / loss_scale. Where that norm is not finite (the
  // scaled gradients overflowed) nothing is updated, as above. A power of two (the default scale,
  // and what halving and doubling it give) divides out exactly.
  float loss_scale = 1.0f;
};

// The gradient scale that clips the global norm to max_grad_norm (0: no clipping), as
// AdamStep::grad_sum_squares asks backends to compute it (from the true norm: the scaled one
// divided by AdamStep::loss_scale).
inline float grad_clip_scale(double norm, float max_grad_norm) {
  return (max_grad_norm > 0 && norm > max_grad_norm) ? static_cast<float>(max_grad_norm / (norm + 1e-6)) : 1.0f;
}

class LayerKernels {
 public:
  virtual ~LayerKernels() = default;

  // Called once, after the core initialized the communicator on the same device (the order is in
  // communicator.hpp); the backend creates its stream and memory on binding.device_index.
  virtual void bind(const KernelsBinding& binding) = 0;
  // The memory kind is fixed from creation; the index is binding.device_index once bound.
  virtual Device device() const = 0;
  // How many devices of device().kind this process can bind (the GPUs it sees; 1 for the host).
  // Asked before bind(), to place ranks; it must not create a device context.
  virtual int device_count() const = 0;
  virtual DType activation_dtype() const = 0;  // dtype of [s, b, h] activations between layers

  virtual std::shared_ptr<EmbeddingLayer> make_embedding() = 0;
  virtual std::shared_ptr<TransformerBlock> make_block(int layer_index) = 0;
  // tied: an embedding layer on this rank whose word matrix the head shares, or nullptr to own
  // a copy.
  virtual std::shared_ptr<HeadLayer> make_head(EmbeddingLayer* tied) = 0;

  // Zero-filled device memory.
  virtual OwnedTensor allocate(const std::vector<int64_t>& shape, DType dtype) = 0;
  virtual void copy_from_host(Tensor dst, const void* src) = 0;
  virtual void copy_to_host(void* dst, const Tensor& src) = 0;
  virtual void copy(Tensor dst, const Tensor& src) = 0;
  virtual void fill_zero(Tensor t) = 0;
  // Sum of squares of F32 tensors, accumulated in double where the backend can.
  virtual double sum_squares(const std::vector<Tensor>& tensors) = 0;
  // Since ABI 1.5. The same sum, written to `out` (F32 [1] in the kernels' memory) in stream
  // order, without waiting for it.
  virtual void sum_squares_into(const std::vector<Tensor>& tensors, Tensor out) = 0;
  // Updates each entry's master and moments from its gradient. An entry may be a flat range of
  // a parameter (1-D views of master, grad and moments at the same offset into it, as a
  // distributed optimizer's shard cuts parameters); the backend keeps any working copy of that
  // range in step. Entries in other memory than a placed master (the distributed optimizer's
  // shard of a parameter placed with an empty master) update only what they point at.
  virtual void adam_step(const std::vector<ParamRef>& params, const AdamStep& step) = 0;
  // Since ABI 1.3. From now on each parameter's master weights and gradient live where
  // params[i].master and params[i].grad point (f32 memory from allocate(), the parameter's shape;
  // for the core, views into one buffer per model chunk that it reduces in place, without
  // copies). params lists parameters as parameters() gave them, with only those two tensors
  // changed; the backend copies the current master values over, then frees its own master,
  // gradient and moment memory (the optimizer state is the core's from here on). Called at most
  // once, before the first forward.
  // Since ABI 1.5 a placed master may be empty (data null, shape still the parameter's): the core
  // keeps no whole fp32 master of that parameter (the distributed optimizer keeps 1/d of it). The
  // backend then keeps whatever it computes from (a bf16 working copy, the fp32 values its kernels
  // read) and takes new values only through set_weights.
  virtual void place_parameters(const std::vector<ParamRef>& params) = 0;
  // The core wrote master weights (initialization, checkpoint load): refresh working copies of
  // the parameters placed with a master.
  virtual void params_updated() = 0;
  // Since ABI 1.5. For parameters placed with an empty master: params[i].master holds the whole
  // new fp32 values of the parameter named params[i].name (its local shape, memory from
  // allocate()); the backend copies them into what it computes from, in stream order (the core
  // may overwrite that memory with work it enqueues after this call). Other tensors of the
  // entries are ignored. A name the backend does not hold, or another shape, is an Error.
  virtual void set_weights(const std::vector<ParamRef>& params) = 0;
  // Since ABI 1.5. Memory the backend keeps for reuse (a caching allocator's free blocks) goes
  // back to the device. The core calls it after one-off work that allocated large scratch
  // buffers (the distributed optimizer's initialization, checkpoint load and save), whose sizes
  // no step asks for again. Waits for the backend's work.
  virtual void release_cached_memory() = 0;
  virtual void synchronize() = 0;
  virtual void* stream() = 0;  // cudaStream_t for CUDA backends, nullptr on the host

  // Since ABI 1.4. A second stream, for the data-parallel gradient reduction that runs beside
  // the backward: the core binds a communicator of its own to it and enqueues from another host
  // thread. nullptr on the host, where every call completes before it returns.
  virtual void* side_stream() = 0;
  // Work enqueued on side_stream() after this call waits for all work enqueued on stream()
  // before it (a bucket's gradients are final). Called from the thread that computes.
  virtual void side_waits_for_compute() = 0;
  // Work enqueued on stream() after this call waits for all work enqueued on side_stream()
  // before it (the flush). Called from the thread that computes, once the other thread has
  // enqueued what it is waited for.
  virtual void compute_waits_for_side() = 0;

  // Since ABI 1.7. What the backend runs besides activation_dtype(): bits of PrecisionSupport.
  // Asked before bind(); the core never asks a plugin of an older minor, which runs none.
  virtual uint32_t precisions() const { return 0; }
  // Since ABI 1.8. Bits of ActivationMemoryFeature the backend runs. Asked before bind(); the
  // core never asks a plugin of an older minor, which runs none.
  virtual uint32_t activation_memory_features() const { return 0; }
  // Since ABI 1.9. Whether the blocks run TransformerBlock::backward_input and backward_weight.
  // Asked before bind(); the core never asks a plugin of an older minor. Without them the core
  // runs a zero-bubble schedule's BackwardInput as the whole backward and its BackwardWeight as
  // nothing (the same losses, without the schedule's smaller bubble).
  virtual bool splits_backward() const { return false; }

  // Since ABI 1.10. A third stream, for the pipeline's sends and receives, which the core posts
  // ahead of the compute that waits for them (a zero-bubble stage runs its weight gradients
  // meanwhile): the core binds a communicator of its own to it and enqueues from another host
  // thread. nullptr on the host, where every call completes before it returns. The core never
  // calls these on a plugin of an older minor, whose transfers stay on stream().
  virtual void* transfer_stream() { return nullptr; }
  // Work enqueued on transfer_stream() after this call waits for all work enqueued on stream()
  // before it (what a send reads is written; memory a receive reuses is free). Called from the
  // thread that computes.
  virtual void transfer_waits_for_compute() {}
  // Work enqueued on stream() after this call waits for all work enqueued on transfer_stream()
  // before it (a receive has landed; a send has read what it sends). Called from the thread that
  // computes, once the other thread has enqueued what it is waited for.
  virtual void compute_waits_for_transfer() {}
};

}  // namespace ptdp
