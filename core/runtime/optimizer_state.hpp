#pragma once
// The fp32 master weights' optimizer side and the Adam moments of one rank, and the optimizer
// step over them. Without the distributed optimizer every rank holds both moments of every
// parameter it holds, and the master weights are the chunks' whole buffers. With it (ZeRO-1, as
// Megatron-Core's distributed optimizer) a rank holds the master weights and moments of its 1/d
// shard of every bucket only, updates that shard from the reduce-scattered gradients, and the
// updated shards are all-gathered over the data-parallel group into the backend's working
// weights (set_weights). With a reduction lane and overlap_param_gather the all-gathers run there,
// one bucket ahead of the next step's forward: a layer's weights are taken (weights_needed) right
// before its first forward, while the lane gathers the next bucket's.
#include <functional>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/chunk_buffers.hpp"
#include "runtime/timeline_recorder.hpp"
#include "runtime/topology.hpp"

namespace ptdp {

class CommLane;

class OptimizerState {
 public:
  // Allocates the moments (zero) and points the chunks' parameters' moments at them (whole), or
  // allocates this rank's shards of master weights and moments (sharded; the chunks then hold no
  // master buffer).
  OptimizerState(LayerKernels& kernels, const ParallelGroups& groups, std::vector<ChunkBuffers>& chunks,
                 bool distributed);
  // From the next step on, the sharded all-gathers run on `lane` beside the forward, recorded in
  // `timeline` (until then, and without a call, on the computing thread right after Adam).
  void gather_on_lane(CommLane& lane, TimelineRecorder& timeline);

  bool distributed() const { return distributed_; }
  // Bytes this rank allocated for the fp32 master weights (whole or its shard) and the moments.
  int64_t master_bytes() const { return master_bytes_; }
  int64_t moment_bytes() const { return moment_bytes_; }

  // The square of the L2 norm of the whole model's gradient, each element counted once over the
  // job (from the whole gradients over the model group, or from this rank's shards over the
  // world), in a one-element F32 tensor on the kernels' device, in stream order: Adam reads it
  // there (AdamStep::grad_sum_squares), and the host reads it with read_grad_norm when it must.
  const Tensor& grad_sum_squares(const GridPosition& me, int stages);
  // The norm of the last grad_sum_squares (waits for it).
  double read_grad_norm();
  // Adam on what this rank updates; sharded, then each bucket's updated master all-gathered and
  // handed to the backend, now or (with a lane) as the next forward reaches it. The gather lands
  // in the bucket's range of the gradient buffer, which nothing reads again before the next
  // backward; a bucket whose weights are taken later is zeroed then, not by the next step.
  void step(const AdamStep& adam);
  // Whether buckets gathered on the lane still wait to be taken (their gradients not yet zeroed).
  bool weights_pending() const { return pending_; }
  // Layer `unit` of `chunk` is about to run forward: takes the weights of every bucket up to the
  // ones that hold it, in forward order.
  void weights_needed(int chunk, int unit);
  // Takes every pending bucket's weights (before anything but a training forward reads them).
  void take_all_weights();

  // Every parameter as the trainer holds it (master and moments empty when sharded): names and
  // shapes, for a checkpoint's check.
  std::vector<ParamRef> whole_params() const;
  // Runs fn on groups of parameters with their whole master and moments (a checkpoint save):
  // every parameter at once, or, sharded, one bucket's parameters at a time, gathered over the
  // data-parallel group into scratch buffers the size of that bucket (given back to the device
  // at the end: no step reuses them).
  void for_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn);
  // fn writes the master and whole moments of the parameters it is given (initialization, a
  // checkpoint load), in the same groups and starting from zero; a sharded state then keeps its
  // shard of them. Either way the backend's working weights are brought up to date.
  void load_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn);

 private:
  struct ChunkShard {
    OwnedTensor master, exp_avg, exp_avg_sq;  // this rank's shards of every bucket, back to back
    std::vector<int64_t> bucket_start;        // where each bucket's shard starts in them
    std::vector<ParamRef> pieces;             // Adam's entries: ranges of parameters inside the shards
  };
  // One bucket's parameters, with master and moments pointed at views of bucket-sized buffers
  // (an empty buffer leaves that tensor empty).
  std::vector<ParamRef> bucket_params(const ChunkBuffers& chunk, const GradientBucket& bucket, const Tensor& master,
                                      const Tensor& exp_avg, const Tensor& exp_avg_sq) const;
  // The whole of bucket b of chunk c's shard tensor `shard`, into `whole` (bucket-sized), over
  // `data` (the computing thread's group, or the lane's).
  void gather(Communicator& data, size_t c, size_t b, const Tensor& shard, const Tensor& whole);
  // The lane gathers the master of order_[next_] into its gradient range.
  void post_gather();
  // The gathered master of order_[next_] goes to the backend, its gradient range is zeroed, and
  // the lane starts on the next.
  void take_next();
  struct BucketRef {
    size_t chunk, bucket;
  };

  LayerKernels& kernels_;
  const ParallelGroups& groups_;
  std::vector<ChunkBuffers>& chunks_;
  bool distributed_;
  int64_t master_bytes_ = 0, moment_bytes_ = 0;
  OwnedTensor sum_squares_;  // F32 [1], grad_sum_squares' result
  std::vector<OwnedTensor> whole_;   // per chunk: exp_avg and exp_avg_sq in the chunk's layout
  std::vector<ChunkShard> shards_;
  CommLane* lane_ = nullptr;
  TimelineRecorder* timeline_ = nullptr;
  std::vector<BucketRef> order_;                 // every bucket, in the order the forward needs them
  std::vector<std::vector<size_t>> needed_upto_;  // per chunk and layer: the last place in order_ it needs
  size_t next_ = 0;                              // the first bucket of order_ not taken yet
  bool pending_ = false;                         // a step's gathers are under way on the lane
};

}  // namespace ptdp
