#pragma once
// The SDK's tensor-parallel regions (ptdp/tensor_parallel_regions.hpp) on this plugin's act_t
// rows: where a layer's rows cross the tensor-parallel group, at a column-parallel GEMM's input
// and a row-parallel GEMM's output, forward and backward. Without sequence parallelism every rank
// holds all s·b rows of an activation and the regions are the paper's all-reduces; with it
// (KernelsBinding::sequence_parallel) each rank holds its s/t·b rows between the GEMMs, the rows
// ordered (position, sample) so that its share is one contiguous block, and the regions gather
// and reduce-scatter. The collectives run on the communicator's bound stream, the kernels'.
#include <cstdint>

#include "activation_type.hpp"
#include "arena.hpp"
#include "ptdp/layer_kernels.hpp"
#include "ptdp/tensor_parallel_regions.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

class TensorParallelRows {
 public:
  // group: the tensor-parallel communicator (null at t = 1).
  TensorParallelRows(Communicator* group, bool sequence_parallel, const ModelSpec& model, int device, DeviceArena& arena);

  bool sequence_parallel() const { return regions_.sequence_parallel(); }
  int64_t tokens() const { return int64_t(model_.seq_len) * model_.micro_batch; }  // rows a GEMM works on
  int64_t local_seq() const { return regions_.local_rows(model_.seq_len); }         // positions held between layers
  int64_t local_tokens() const { return local_seq() * model_.micro_batch; }
  int64_t first_position() const { return regions_.first_row(model_.seq_len); }
  int64_t first_local_row() const { return first_position() * model_.micro_batch; }

  // A column-parallel GEMM's input [tokens, cols]: `local` itself, or gathered into `whole`.
  const act_t* column_parallel_input(const act_t* local, DeviceBuffer<act_t>& whole, int64_t cols);
  // Its input gradient: the partial sums `whole_grad` all-reduced in place, or reduce-scattered
  // into `local`; returns this rank's rows of the sum.
  act_t* column_parallel_input_grad(act_t* whole_grad, DeviceBuffer<act_t>& local, int64_t cols);
  // A row-parallel GEMM's partial sums: all-reduced in place, or reduce-scattered into `local`;
  // returns this rank's rows of the sum.
  act_t* row_parallel_output(act_t* partial, DeviceBuffer<act_t>& local, int64_t cols);
  // Its output gradient as the GEMM's backward reads it [tokens, cols]: `local_grad` itself, or
  // gathered into `whole`.
  const act_t* row_parallel_output_grad(const act_t* local_grad, DeviceBuffer<act_t>& whole, int64_t cols);

 private:
  Tensor rows(const act_t* data, int64_t count, int64_t cols) const;
  act_t* allocate(DeviceBuffer<act_t>& buffer, int64_t count, int64_t cols);

  TensorParallelRegions regions_;
  ModelSpec model_;
  int device_;
  DeviceArena& arena_;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
