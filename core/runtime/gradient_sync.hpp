#pragma once
// The data-parallel gradient reduction. Each bucket of each chunk's gradient buffer is reduced
// over the data-parallel group, in place, as soon as its gradients are final (the last
// microbatch's backward of the layers in it): it is handed to the reduction lane, which runs it
// while the backward goes on (comm_lane.hpp). The flush sums the tied word embedding over
// the embedding group, hands over what is left and waits for the lane. With the distributed
// optimizer a bucket is reduce-scattered: each rank ends with the sum of its own 1/d shard.
// Gradients are already those of the global-batch mean (the loss was scaled by 1/(m·d) before
// the backward), so the reduction is a plain fp32 sum.
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/chunk_buffers.hpp"
#include "runtime/comm_lane.hpp"
#include "runtime/timeline_recorder.hpp"
#include "runtime/topology.hpp"

namespace ptdp {

class GradientReducer {
 public:
  // lane: where the reductions run; null when the data-parallel group is one rank. zeroed: per
  // chunk, the gradients each step starts from zero (gradient_zeroing.hpp); the backward writes
  // or adds to the rest.
  // sequence_parallel: the gradients of parameters every tensor rank holds whole are each rank's
  // rows' share (KernelsBinding::sequence_parallel); a layer's are summed over the tensor group
  // once its gradients are final, before any bucket holding them is reduced.
  GradientReducer(LayerKernels& kernels, const ParallelGroups& groups, std::vector<ChunkBuffers>& chunks,
                  std::vector<std::vector<Tensor>> zeroed, bool reduce_scatter, CommLane* lane,
                  TimelineRecorder& timeline, bool sequence_parallel = false);

  // Zeroes the gradients that start from zero, unless the optimizer still has the last step's
  // gathered weights in the buffers (and zeroes each bucket once it has taken them).
  void begin_step(bool zero_gradients = true);
  // Layer `unit` of `chunk` ran its last backward of the step: reduces every bucket now final.
  void layer_final(int chunk, int unit);
  // The flush: the tied word embedding's sum, then every bucket not reduced yet; returns when
  // every bucket is reduced and the compute stream follows the reductions.
  void finish();

 private:
  void reduce(int chunk, size_t bucket);
  // Sums the layer's gradients of parameters every tensor rank holds whole over the tensor group.
  void sum_sequence_shares(int chunk, int unit);

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  std::vector<ChunkBuffers>& chunks_;
  std::vector<std::vector<Tensor>> zeroed_;
  bool reduce_scatter_;
  CommLane* lane_;
  TimelineRecorder& timeline_;
  std::vector<std::vector<bool>> reduced_;  // per chunk and bucket, this step
  bool sequence_parallel_;
};

// This rank's 1/d share of a bucket: [begin, begin + count) of the chunk's buffers.
struct BucketShard {
  int64_t begin = 0, count = 0;
};
BucketShard bucket_shard(const GradientBucket& bucket, int dp_rank, int data_parallel);

// Whether a parameter's gradient counts in the global norm on this rank, so that each element
// counts once: tensors every TP rank holds whole count on TP rank 0, and the last stage's copy of
// the word embedding does not count.
bool counts_in_grad_norm(const ParamRef& p, const GridPosition& me, int stages);

// Sums a host scalar over a group through device memory (communicators move the kernels'
// memory kind).
double all_reduce_scalar(LayerKernels& kernels, Communicator& group, double value, ReduceOp op);

}  // namespace ptdp
