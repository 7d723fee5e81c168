#pragma once
// This rank's share of the model across the tensor-parallel group: the model, the rank's place
// in the group, and the widths of everything the Megatron partitioning splits.
#include <cstdint>
#include <memory>
#include <vector>

#include <ptdp/layer_kernels.hpp>
#include <ptdp/tensor_parallel_regions.hpp>

namespace ptdp::kref {

class ParameterRegistry;

struct Partition {
  ModelSpec model;
  int rank = 0;
  int size = 1;
  Communicator* group = nullptr;  // null only when size == 1
  std::shared_ptr<ParameterRegistry> parameters;  // every parameter the layers made
  Fp8Recipe fp8;                                  // which blocks cast their GEMMs' operands to FP8
  DType working = DType::F32;  // F16: what a GPU would hold in half is rounded to it (fp16_format.hpp)
  TensorParallelRegions regions{nullptr, false};  // where the layers cross the group
  uint32_t recompute_modules = 0;  // bits of RecomputeModule a block's backward recomputes
  bool core_places_parameters = false;  // parameters hold no Adam moments of their own

  int64_t tokens() const { return int64_t{model.seq_len} * model.micro_batch; }  // s * b
  // Rows of the sequence this rank holds outside the GEMMs (s/t under sequence parallelism),
  // the first of them, and their tokens (rows * b).
  int64_t local_seq() const { return regions.local_rows(model.seq_len); }
  int64_t first_position() const { return regions.first_row(model.seq_len); }
  int64_t local_tokens() const { return local_seq() * model.micro_batch; }
  bool recomputes(RecomputeModule m) const { return (recompute_modules & module_bit(m)) != 0; }
  int64_t head_dim() const { return model.hidden / model.heads; }
  int64_t local_heads() const { return model.heads / size; }
  int64_t local_hidden() const { return local_heads() * head_dim(); }  // width of q, k and v
  int64_t local_ffn() const { return model.ffn_hidden / size; }
  int64_t local_vocab() const { return model.padded_vocab / size; }
  int64_t vocab_begin() const { return local_vocab() * rank; }
  // Columns of this rank's vocab shard that are real tokens (the rest is padding).
  int64_t valid_vocab() const;

  // In-place reduction over the group; nothing to do on a single rank.
  void all_reduce(float* data, int64_t count, ReduceOp op) const;

  // precision.params = "fp16": values a GPU run stores in half (the operands of the linear
  // layers' GEMMs, the activations passed between layers and their gradients) are rounded to it
  // where they are made, so that they overflow where fp16 would. Under F32 these do nothing.
  void to_working(float* data, int64_t count) const;
  // A linear layer's weights as its GEMMs read them: `weights` itself, or under fp16 a rounded
  // copy kept in `copy`.
  const float* working_weights(const float* weights, int64_t count, std::vector<float>& copy) const;
};

// Checks everything the partitioning relies on (divisibility, the group's size and rank) and
// throws ptdp::Error naming the offending field otherwise.
Partition make_partition(const KernelsBinding& binding);

// A 1-D host tensor over `count` floats, for the collectives.
Tensor host_view(float* data, int64_t count);

}  // namespace ptdp::kref
