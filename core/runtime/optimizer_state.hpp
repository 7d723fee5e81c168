#pragma once
// The Adam moments of one rank and the optimizer step over them. Without the distributed
// optimizer every rank holds both moments of every parameter it holds. With it (ZeRO-1, as
// Megatron-Core's distributed optimizer) a rank holds the moments of its 1/d shard of every
// bucket only, updates the master weights of that shard from the reduce-scattered gradients, and
// the updated weights are all-gathered over the data-parallel group.
#include <functional>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/chunk_buffers.hpp"
#include "runtime/topology.hpp"

namespace ptdp {

class OptimizerState {
 public:
  // Allocates the moments (zero) and points the chunks' parameters' moments at them (whole) or
  // leaves them empty (sharded).
  OptimizerState(LayerKernels& kernels, const ParallelGroups& groups, std::vector<ChunkBuffers>& chunks,
                 bool distributed);

  bool distributed() const { return distributed_; }
  // Bytes this rank allocated for the moments.
  int64_t bytes() const { return bytes_; }

  // The L2 norm of the whole model's gradient, each element counted once over the job: from the
  // whole gradients over the model group, or from this rank's shards over the world.
  double grad_norm(const GridPosition& me, int stages);
  // Adam on what this rank updates, then (sharded) the all-gather of the updated weights, then
  // the backend's working copies are refreshed.
  void step(const AdamStep& adam);

  // Every parameter as the trainer holds it (moments empty when sharded).
  std::vector<ParamRef> whole_params() const;
  // Runs fn on groups of parameters with their whole moments (a checkpoint save): every parameter
  // at once, or, sharded, one bucket's parameters at a time with their moments all-gathered over
  // the data-parallel group into scratch buffers the size of that bucket.
  void for_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn);
  // fn writes the master and whole moments of the parameters it is given (a checkpoint load), in
  // the same groups; a sharded state then keeps its shard of them.
  void load_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn);

 private:
  struct ChunkShard {
    OwnedTensor exp_avg, exp_avg_sq;  // this rank's shards of every bucket, back to back
    std::vector<int64_t> bucket_start;  // where each bucket's shard starts in them
    std::vector<ParamRef> pieces;       // Adam's entries: ranges of parameters inside the shards
  };
  // One bucket's parameters, their moments pointed at scratch buffers of the bucket's size.
  std::vector<ParamRef> bucket_params(const ChunkBuffers& chunk, const GradientBucket& bucket,
                                      std::vector<OwnedTensor>& scratch) const;

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  std::vector<ChunkBuffers>& chunks_;
  bool distributed_;
  int64_t bytes_ = 0;
  std::vector<OwnedTensor> whole_;   // per chunk: exp_avg and exp_avg_sq in the chunk's layout
  std::vector<ChunkShard> shards_;
};

}  // namespace ptdp
