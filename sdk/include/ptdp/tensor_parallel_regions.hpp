#pragma once
// The tensor-parallel regions of a Megatron layer, named as Megatron-Core's mappings.py names
// them: what crosses the tensor-parallel group where activations enter a column-parallel GEMM
// and leave a row-parallel one, in the forward and, as its conjugate, in the backward.
//
//   region                                       forward          backward
//   copy_to_tensor_parallel_region               identity         all-reduce
//   reduce_from_tensor_parallel_region           all-reduce       identity
//   scatter_to_sequence_parallel_region          own s/t rows     all-gather
//   gather_from_sequence_parallel_region         all-gather       reduce-scatter
//   reduce_scatter_to_sequence_parallel_region   reduce-scatter   all-gather
//
// Without sequence parallelism a column-parallel GEMM's input is copied to the region and a
// row-parallel GEMM's partial sums are reduced from it (the paper's f and g); with it (the
// sequence-parallel paper's g and ḡ) each rank holds s/t of the sequence outside the GEMMs, the
// input is gathered from the sequence-parallel region and the partial sums reduce-scattered to
// it. Activations are [s, b, h] with s slowest, so rank r's part of the sequence is the
// contiguous block of rows [r·s/t, (r+1)·s/t): collectives move it as it is, in rank order.
//
// Functions that produce a tensor of another length take the buffer to write and return the
// tensor that holds the result: that buffer, or their input where the region is an identity or
// works in place. They enqueue on the group's bound stream, so they serve host and device memory
// alike; a null group (a tensor-parallel size of 1) makes every region an identity.
#include "ptdp/communicator.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

class TensorParallelRegions {
 public:
  TensorParallelRegions(Communicator* group, bool sequence_parallel)
      : group_(group != nullptr && group->size() > 1 ? group : nullptr),
        sequence_parallel_(sequence_parallel && group_ != nullptr) {}

  bool sequence_parallel() const { return sequence_parallel_; }
  int size() const { return group_ ? group_->size() : 1; }
  int rank() const { return group_ ? group_->rank() : 0; }
  // Rows of the sequence this rank holds outside the GEMMs, and the first of them.
  int64_t local_rows(int64_t seq_len) const { return sequence_parallel_ ? seq_len / size() : seq_len; }
  int64_t first_row(int64_t seq_len) const { return sequence_parallel_ ? rank() * (seq_len / size()) : 0; }

  // The primitives.
  void copy_to_tensor_parallel_region_backward(Tensor grad) const { all_reduce(grad); }
  void reduce_from_tensor_parallel_region_forward(Tensor partial) const { all_reduce(partial); }
  Tensor scatter_to_sequence_parallel_region_forward(const Tensor& whole) const {
    if (!group_) return whole;
    const int64_t part = whole.numel() / size();
    return whole.flat_slice(rank() * part, part);
  }
  Tensor scatter_to_sequence_parallel_region_backward(const Tensor& local_grad, Tensor whole_grad) const {
    return gather(local_grad, whole_grad);
  }
  Tensor gather_from_sequence_parallel_region_forward(const Tensor& local, Tensor whole) const {
    return gather(local, whole);
  }
  Tensor gather_from_sequence_parallel_region_backward(const Tensor& whole_grad, Tensor local_grad) const {
    return reduce_scatter(whole_grad, local_grad);
  }
  Tensor reduce_scatter_to_sequence_parallel_region_forward(const Tensor& partial, Tensor local) const {
    return reduce_scatter(partial, local);
  }
  Tensor reduce_scatter_to_sequence_parallel_region_backward(const Tensor& local_grad, Tensor whole_grad) const {
    return gather(local_grad, whole_grad);
  }

  // A column-parallel GEMM's input: `x` as this rank holds it, gathered into `whole` under
  // sequence parallelism (else `x` itself, every rank holding all of it).
  Tensor column_parallel_input(const Tensor& x, Tensor whole) const {
    return sequence_parallel_ ? gather_from_sequence_parallel_region_forward(x, whole) : x;
  }
  // Its gradient: the partial sums of the GEMM's input gradient `whole_grad`, reduce-scattered
  // into `local_grad` under sequence parallelism, else all-reduced in place (and returned).
  Tensor column_parallel_input_grad(Tensor whole_grad, Tensor local_grad) const {
    if (sequence_parallel_) return gather_from_sequence_parallel_region_backward(whole_grad, local_grad);
    copy_to_tensor_parallel_region_backward(whole_grad);
    return whole_grad;
  }
  // A row-parallel GEMM's output: its partial sums, reduce-scattered into `local` under sequence
  // parallelism, else all-reduced in place (and returned).
  Tensor row_parallel_output(Tensor partial, Tensor local) const {
    if (sequence_parallel_) return reduce_scatter_to_sequence_parallel_region_forward(partial, local);
    reduce_from_tensor_parallel_region_forward(partial);
    return partial;
  }
  // Its gradient as the GEMM's backward reads it: all-gathered into `whole_grad` under sequence
  // parallelism, else `local_grad` itself.
  Tensor row_parallel_output_grad(const Tensor& local_grad, Tensor whole_grad) const {
    return sequence_parallel_ ? reduce_scatter_to_sequence_parallel_region_backward(local_grad, whole_grad)
                              : local_grad;
  }

 private:
  void all_reduce(Tensor t) const {
    if (group_) group_->all_reduce(t, ReduceOp::Sum);
  }
  Tensor gather(const Tensor& local, Tensor whole) const {
    if (!group_) return local;
    group_->all_gather(local.flat_slice(0, local.numel()), whole.flat_slice(0, whole.numel()));
    return whole;
  }
  Tensor reduce_scatter(const Tensor& whole, Tensor local) const {
    if (!group_) return whole;
    group_->reduce_scatter(whole.flat_slice(0, whole.numel()), local.flat_slice(0, local.numel()), ReduceOp::Sum);
    return local;
  }

  Communicator* group_;
  bool sequence_parallel_;
};

}  // namespace ptdp
