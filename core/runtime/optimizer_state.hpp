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

  // Runs fn on every parameter with its whole moments, gathered into scratch buffers over the
  // data-parallel group when sharded (a checkpoint save).
  void with_whole_moments(const std::function<void(const std::vector<ParamRef>&)>& fn);
  // fn writes every parameter's master and whole moments (a checkpoint load); a sharded state
  // then keeps its shard of them.
  void load_whole_moments(const std::function<void(const std::vector<ParamRef>&)>& fn);

 private:
  struct ChunkShard {
    OwnedTensor exp_avg, exp_avg_sq;  // this rank's shards of every bucket, back to back
    std::vector<int64_t> bucket_start;  // where each bucket's shard starts in them
    std::vector<ParamRef> pieces;       // Adam's entries: ranges of parameters inside the shards
  };
  std::vector<ParamRef> whole_params() const;
  std::vector<OwnedTensor> scratch_moments(std::vector<ParamRef>& params) const;

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  std::vector<ChunkBuffers>& chunks_;
  bool distributed_;
  int64_t bytes_ = 0;
  std::vector<OwnedTensor> whole_;   // per chunk: exp_avg and exp_avg_sq in the chunk's layout
  std::vector<ChunkShard> shards_;
};

}  // namespace ptdp
