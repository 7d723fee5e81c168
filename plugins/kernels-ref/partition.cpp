#include "partition.hpp"

#include <algorithm>
#include <string>

#include "fp16_format.hpp"
#include "parameter.hpp"

namespace ptdp::kref {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw Error("kernels-ref: " + message);
}

std::string divisible(const char* what, int value, const char* by, int divisor) {
  return std::string(what) + " (" + std::to_string(value) + ") must be divisible by " + by + " (" +
         std::to_string(divisor) + ")";
}

}  // namespace

int64_t Partition::valid_vocab() const {
  return std::clamp<int64_t>(model.vocab - vocab_begin(), 0, local_vocab());
}

Tensor host_view(float* data, int64_t count) { return Tensor{data, DType::F32, {count}, Device{MemoryKind::Host, 0}}; }

void Partition::all_reduce(float* data, int64_t count, ReduceOp op) const {
  if (size == 1) return;
  group->all_reduce(host_view(data, count), op);
}

void Partition::to_working(float* data, int64_t count) const {
  if (working == DType::F16) round_to_fp16(data, count);
}

const float* Partition::working_weights(const float* weights, int64_t count, std::vector<float>& copy) const {
  if (working != DType::F16) return weights;
  copy.assign(weights, weights + count);
  round_to_fp16(copy.data(), count);
  return copy.data();
}

Partition make_partition(const KernelsBinding& b) {
  const ModelSpec& m = b.model;
  require(m.layers > 0, "model.layers must be positive (got " + std::to_string(m.layers) + ")");
  require(m.hidden > 0 && m.heads > 0 && m.seq_len > 0 && m.vocab > 0 && m.ffn_hidden > 0 &&
              m.micro_batch > 0,
          "model.hidden, heads, seq_len, vocab, ffn_hidden and micro_batch must all be positive");
  require(b.tp_size > 0, "tp_size must be positive (got " + std::to_string(b.tp_size) + ")");
  require(b.tp_rank >= 0 && b.tp_rank < b.tp_size,
          "tp_rank " + std::to_string(b.tp_rank) + " is outside the group of " +
              std::to_string(b.tp_size));
  require(m.hidden % m.heads == 0, divisible("model.hidden", m.hidden, "model.heads", m.heads));
  require(m.heads % b.tp_size == 0, divisible("model.heads", m.heads, "the tensor-parallel size", b.tp_size));
  require(m.ffn_hidden % b.tp_size == 0,
          divisible("model.ffn_hidden", m.ffn_hidden, "the tensor-parallel size", b.tp_size));
  require(m.padded_vocab >= m.vocab, "model.padded_vocab (" + std::to_string(m.padded_vocab) +
                                         ") is smaller than model.vocab (" + std::to_string(m.vocab) + ")");
  require(m.padded_vocab % b.tp_size == 0,
          divisible("model.padded_vocab", m.padded_vocab, "the tensor-parallel size", b.tp_size));
  require(m.dropout >= 0.0f && m.dropout < 1.0f,
          "model.dropout must be in [0, 1) (got " + std::to_string(m.dropout) + ")");
  require(m.layernorm_eps > 0.0f, "model.layernorm_eps must be positive");
  if (b.tp_size > 1) {
    require(b.tp != nullptr, "tp_size is " + std::to_string(b.tp_size) + " but no tensor-parallel communicator was given");
  }
  if (b.tp != nullptr) {
    require(b.tp->size() == b.tp_size, "the tensor-parallel communicator '" + b.tp->name() + "' has " +
                                           std::to_string(b.tp->size()) + " ranks but tp_size is " +
                                           std::to_string(b.tp_size));
    require(b.tp->rank() == b.tp_rank, "the tensor-parallel communicator '" + b.tp->name() +
                                           "' says rank " + std::to_string(b.tp->rank()) +
                                           " but tp_rank is " + std::to_string(b.tp_rank));
    require((b.tp->memory_kinds() & memory_bit(MemoryKind::Host)) != 0,
            "the tensor-parallel communicator '" + b.tp->name() + "' cannot move host memory");
  }
  if (b.fp8.enabled)
    require(b.fp8.amax_history >= 1 && b.fp8.bf16_first_blocks >= 0 && b.fp8.bf16_last_blocks >= 0,
            "the FP8 recipe needs an amax history of at least 1 step and non-negative counts of bf16 blocks");
  require(b.working == DType::F32 || b.working == DType::F16,
          std::string("the working type ") + dtype_name(b.working) + " is not one this backend runs (f32, or f16 "
          "emulated in f32)");
  if (b.sequence_parallel) {
    require(b.tp_size > 1, "sequence parallelism needs a tensor-parallel size above 1 (got " +
                               std::to_string(b.tp_size) + ")");
    require(m.seq_len % b.tp_size == 0, divisible("model.seq_len", m.seq_len, "the tensor-parallel size", b.tp_size));
  }
  return Partition{m,       b.tp_rank, b.tp_size, b.tp, std::make_shared<ParameterRegistry>(), b.fp8, b.working,
                   TensorParallelRegions{b.tp_size > 1 ? b.tp : nullptr, b.sequence_parallel},
                   b.recompute_modules, b.core_places_parameters};
}

}  // namespace ptdp::kref
