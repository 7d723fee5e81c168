#include "runtime/optimizer_state.hpp"

#include <cmath>

#include "runtime/gradient_sync.hpp"

namespace ptdp {

namespace {

// A 1-D view of `count` elements at `offset` inside parameter `p` (whose tensors are views into
// flat buffers), with `exp_avg`/`exp_avg_sq` pointing at the matching moments.
ParamRef piece_of(const ParamRef& p, int64_t offset, int64_t count, Tensor exp_avg, Tensor exp_avg_sq) {
  ParamRef piece = p;
  piece.master = p.master.flat_slice(offset, count);
  piece.grad = p.grad.flat_slice(offset, count);
  piece.exp_avg = std::move(exp_avg);
  piece.exp_avg_sq = std::move(exp_avg_sq);
  return piece;
}

}  // namespace

OptimizerState::OptimizerState(LayerKernels& kernels, const ParallelGroups& groups, std::vector<ChunkBuffers>& chunks,
                               bool distributed)
    : kernels_(kernels), groups_(groups), chunks_(chunks), distributed_(distributed) {
  const int d = groups_.data->size(), r = groups_.data->rank();
  for (ChunkBuffers& chunk : chunks_) {
    const BufferLayout& layout = chunk.layout();
    if (!distributed_) {
      whole_.push_back(kernels_.allocate({layout.size}, DType::F32));
      whole_.push_back(kernels_.allocate({layout.size}, DType::F32));
      const Tensor& m = whole_[whole_.size() - 2].view;
      const Tensor& v = whole_.back().view;
      for (size_t k = 0; k < chunk.params().size(); ++k) {
        ParamRef& p = chunk.params()[k];
        p.exp_avg = buffer_view(m, layout.offsets[k], p.master.shape);
        p.exp_avg_sq = buffer_view(v, layout.offsets[k], p.master.shape);
      }
      bytes_ += 2 * layout.size * static_cast<int64_t>(sizeof(float));
      continue;
    }
    ChunkShard shard;
    int64_t total = 0;
    for (const GradientBucket& bucket : layout.buckets) {
      shard.bucket_start.push_back(total);
      total += bucket_shard(bucket, r, d).count;
    }
    shard.exp_avg = kernels_.allocate({total}, DType::F32);
    shard.exp_avg_sq = kernels_.allocate({total}, DType::F32);
    bytes_ += 2 * total * static_cast<int64_t>(sizeof(float));
    for (size_t b = 0; b < layout.buckets.size(); ++b) {
      const BucketShard s = bucket_shard(layout.buckets[b], r, d);
      for (const ParamRange& range : params_in_range(layout, chunk.entries(), s.begin, s.begin + s.count)) {
        const int64_t at = shard.bucket_start[b] + layout.offsets[range.param] + range.offset - s.begin;
        shard.pieces.push_back(piece_of(chunk.params()[range.param], range.offset, range.count,
                                        shard.exp_avg.view.flat_slice(at, range.count),
                                        shard.exp_avg_sq.view.flat_slice(at, range.count)));
      }
    }
    shards_.push_back(std::move(shard));
  }
}

std::vector<ParamRef> OptimizerState::whole_params() const {
  std::vector<ParamRef> all;
  for (const ChunkBuffers& chunk : chunks_) all.insert(all.end(), chunk.params().begin(), chunk.params().end());
  return all;
}

double OptimizerState::grad_norm(const GridPosition& me, int stages) {
  std::vector<Tensor> counted;
  if (!distributed_) {
    for (const ChunkBuffers& chunk : chunks_)
      for (const ParamRef& p : chunk.params())
        if (counts_in_grad_norm(p, me, stages)) counted.push_back(p.grad);
    return std::sqrt(all_reduce_scalar(kernels_, *groups_.model, kernels_.sum_squares(counted), ReduceOp::Sum));
  }
  // Only this rank's shards hold summed gradients; the shards of the data-parallel ranks
  // partition every chunk, so the world's sum counts each element once.
  for (const ChunkShard& shard : shards_)
    for (const ParamRef& piece : shard.pieces)
      if (counts_in_grad_norm(piece, me, stages)) counted.push_back(piece.grad);
  return std::sqrt(all_reduce_scalar(kernels_, *groups_.world, kernels_.sum_squares(counted), ReduceOp::Sum));
}

void OptimizerState::step(const AdamStep& adam) {
  if (!distributed_) {
    kernels_.adam_step(whole_params(), adam);
    return;
  }
  std::vector<ParamRef> pieces;
  for (const ChunkShard& shard : shards_) pieces.insert(pieces.end(), shard.pieces.begin(), shard.pieces.end());
  kernels_.adam_step(pieces, adam);
  Communicator& data = *groups_.data;
  for (const ChunkBuffers& chunk : chunks_)
    for (const GradientBucket& bucket : chunk.layout().buckets) {
      // In place: the input is this rank's block of the output.
      const BucketShard s = bucket_shard(bucket, data.rank(), data.size());
      if (data.size() > 1)
        data.all_gather(chunk.master().flat_slice(s.begin, s.count), chunk.master().flat_slice(bucket.offset, bucket.size));
    }
  kernels_.params_updated();
}

std::vector<ParamRef> OptimizerState::bucket_params(const ChunkBuffers& chunk, const GradientBucket& bucket,
                                                    std::vector<OwnedTensor>& scratch) const {
  scratch = {kernels_.allocate({bucket.size}, DType::F32), kernels_.allocate({bucket.size}, DType::F32)};
  std::vector<ParamRef> params;
  for (size_t k : bucket.params) {
    ParamRef p = chunk.params()[k];
    const int64_t at = chunk.layout().offsets[k] - bucket.offset;
    p.exp_avg = buffer_view(scratch[0].view, at, p.master.shape);
    p.exp_avg_sq = buffer_view(scratch[1].view, at, p.master.shape);
    params.push_back(std::move(p));
  }
  return params;
}

void OptimizerState::for_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn) {
  if (!distributed_) return fn(whole_params());
  Communicator& data = *groups_.data;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const auto& buckets = chunks_[c].layout().buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<OwnedTensor> scratch;
      const std::vector<ParamRef> params = bucket_params(chunks_[c], buckets[b], scratch);
      const BucketShard s = bucket_shard(buckets[b], data.rank(), data.size());
      const int64_t at = shards_[c].bucket_start[b];
      for (int moment = 0; moment < 2; ++moment) {
        const Tensor& shard = moment == 0 ? shards_[c].exp_avg.view : shards_[c].exp_avg_sq.view;
        if (data.size() > 1) data.all_gather(shard.flat_slice(at, s.count), scratch[moment].view);
        else kernels_.copy(scratch[moment].view, shard.flat_slice(at, s.count));
      }
      fn(params);
    }
  }
}

void OptimizerState::load_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn) {
  if (!distributed_) return fn(whole_params());
  const int d = groups_.data->size(), r = groups_.data->rank();
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const auto& buckets = chunks_[c].layout().buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      std::vector<OwnedTensor> scratch;
      fn(bucket_params(chunks_[c], buckets[b], scratch));
      const BucketShard s = bucket_shard(buckets[b], r, d);
      const int64_t at = shards_[c].bucket_start[b];
      const int64_t from = s.begin - buckets[b].offset;
      kernels_.copy(shards_[c].exp_avg.view.flat_slice(at, s.count), scratch[0].view.flat_slice(from, s.count));
      kernels_.copy(shards_[c].exp_avg_sq.view.flat_slice(at, s.count), scratch[1].view.flat_slice(from, s.count));
      kernels_.synchronize();  // before the scratch buffers go
    }
  }
}

}  // namespace ptdp
