#include "runtime/gradient_sync.hpp"

#include <fmt/format.h>

namespace ptdp {

double all_reduce_scalar(LayerKernels& kernels, Communicator& group, double value, ReduceOp op) {
  if (group.size() == 1) return value;
  float v = static_cast<float>(value);
  OwnedTensor buffer = kernels.allocate({1}, DType::F32);
  kernels.copy_from_host(buffer.view, &v);
  group.all_reduce(buffer.view, op);
  kernels.copy_to_host(&v, buffer.view);
  return v;
}

BucketShard bucket_shard(const GradientBucket& bucket, int dp_rank, int data_parallel) {
  const int64_t count = bucket.size / data_parallel;
  return {bucket.offset + dp_rank * count, count};
}

bool counts_in_grad_norm(const ParamRef& p, const GridPosition& me, int stages) {
  if (p.shard_dim < 0 && me.tp != 0) return false;
  return !(p.name == "embedding.word" && stages > 1 && me.pp == stages - 1);
}

GradientReducer::GradientReducer(LayerKernels& kernels, const ParallelGroups& groups, std::vector<ChunkBuffers>& chunks,
                                 std::vector<std::vector<Tensor>> zeroed, bool reduce_scatter, CommLane* lane,
                                 TimelineRecorder& timeline, bool sequence_parallel)
    : kernels_(kernels), groups_(groups), chunks_(chunks), zeroed_(std::move(zeroed)), reduce_scatter_(reduce_scatter),
      lane_(lane), timeline_(timeline), sequence_parallel_(sequence_parallel && groups.tensor->size() > 1) {
  PTDP_CHECK(zeroed_.size() == chunks_.size(), "GradientReducer: one list of gradients to zero per chunk");
  PTDP_CHECK(lane_ || groups_.data->size() == 1, "a data-parallel group of more than one rank needs a reduction lane");
  for (const ChunkBuffers& c : chunks_) reduced_.emplace_back(c.layout().buckets.size(), false);
}

void GradientReducer::begin_step(bool zero_gradients) {
  if (zero_gradients)
    timeline_.span("zero gradients", "optimizer", [&] {
      for (const std::vector<Tensor>& chunk : zeroed_)
        for (const Tensor& t : chunk) kernels_.fill_zero(t);
    });
  for (auto& flags : reduced_) flags.assign(flags.size(), false);
}

void GradientReducer::sum_sequence_shares(int chunk, int unit) {
  const ChunkBuffers& c = chunks_.at(chunk);
  timeline_.span("tp all-reduce of replicated gradients", "collective", [&] {
    for (size_t i = 0; i < c.params().size(); ++i)
      if (c.entries()[i].unit == unit && c.params()[i].shard_dim < 0)
        groups_.tensor->all_reduce(c.params()[i].grad, ReduceOp::Sum);
  });
}

void GradientReducer::layer_final(int chunk, int unit) {
  if (sequence_parallel_) sum_sequence_shares(chunk, unit);
  const auto& buckets = chunks_.at(chunk).layout().buckets;
  for (size_t b = 0; b < buckets.size(); ++b)
    if (!buckets[b].alone && buckets[b].final_after_unit >= unit && !reduced_[chunk][b]) reduce(chunk, b);
}

void GradientReducer::finish() {
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkBuffers& chunk = chunks_[c];
    for (size_t b = 0; b < chunk.layout().buckets.size(); ++b) {
      const GradientBucket& bucket = chunk.layout().buckets[b];
      if (bucket.alone && groups_.embedding) {
        // The first and last stage's copies of the word embedding get the sum of both gradients
        // before the data-parallel reduction (a sum of sums, in either order).
        timeline_.span("embedding all-reduce", "collective", [&] {
          for (size_t k : bucket.params) groups_.embedding->all_reduce(chunk.params()[k].grad, ReduceOp::Sum);
        });
      }
      if (!reduced_[c][b]) reduce(static_cast<int>(c), b);
    }
  }
  if (!lane_) return;
  timeline_.span("wait for dp reductions", "collective", [&] { lane_->wait_all(); });
  kernels_.compute_waits_for_side();
}

void GradientReducer::reduce(int chunk, size_t b) {
  reduced_[chunk][b] = true;
  if (!lane_) return;
  const Tensor grad = chunks_[chunk].grad();
  const GradientBucket* bucket = &chunks_[chunk].layout().buckets[b];  // layouts never change
  std::string name = fmt::format("dp {} {}.{}", reduce_scatter_ ? "reduce-scatter" : "all-reduce", chunk, b);
  // What the lane enqueues on the side stream follows the backward enqueued so far.
  kernels_.side_waits_for_compute();
  lane_->post([this, name = std::move(name), grad, bucket] {
    Communicator& data = lane_->group();
    const Tensor range = grad.flat_slice(bucket->offset, bucket->size);
    timeline_.lane_span(name, "data-parallel", [&] {
      if (!reduce_scatter_) {
        data.all_reduce(range, ReduceOp::Sum);
        return;
      }
      // In place: the output is this rank's block of the input.
      const BucketShard shard = bucket_shard(*bucket, data.rank(), data.size());
      data.reduce_scatter(range, grad.flat_slice(shard.begin, shard.count), ReduceOp::Sum);
    });
  });
}

}  // namespace ptdp
