#include "runtime/optimizer_state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/gradient_sync.hpp"
#include "runtime/comm_lane.hpp"

namespace ptdp {

namespace {

// A 1-D view of `count` elements at `offset` inside parameter `p` (whose gradient is a view into
// a flat buffer), with master and moments pointing at the matching shard ranges.
ParamRef piece_of(const ParamRef& p, int64_t offset, int64_t count, Tensor master, Tensor exp_avg, Tensor exp_avg_sq) {
  ParamRef piece = p;
  piece.master = std::move(master);
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
  constexpr int64_t kF32 = sizeof(float);
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
      master_bytes_ += layout.size * kF32;  // the chunk's buffer
      moment_bytes_ += 2 * layout.size * kF32;
      continue;
    }
    ChunkShard shard;
    int64_t total = 0;
    for (const GradientBucket& bucket : layout.buckets) {
      shard.bucket_start.push_back(total);
      total += bucket_shard(bucket, r, d).count;
    }
    shard.master = kernels_.allocate({total}, DType::F32);
    shard.exp_avg = kernels_.allocate({total}, DType::F32);
    shard.exp_avg_sq = kernels_.allocate({total}, DType::F32);
    master_bytes_ += total * kF32;
    moment_bytes_ += 2 * total * kF32;
    for (size_t b = 0; b < layout.buckets.size(); ++b) {
      const BucketShard s = bucket_shard(layout.buckets[b], r, d);
      for (const ParamRange& range : params_in_range(layout, chunk.entries(), s.begin, s.begin + s.count)) {
        const int64_t at = shard.bucket_start[b] + layout.offsets[range.param] + range.offset - s.begin;
        shard.pieces.push_back(piece_of(chunk.params()[range.param], range.offset, range.count,
                                        shard.master.view.flat_slice(at, range.count),
                                        shard.exp_avg.view.flat_slice(at, range.count),
                                        shard.exp_avg_sq.view.flat_slice(at, range.count)));
      }
    }
    shards_.push_back(std::move(shard));
    // Buckets run from the last layer to the first: the forward needs them in reverse.
    const size_t c = shards_.size() - 1;
    int units = 0;
    for (const LayoutEntry& e : chunk.entries()) units = std::max(units, e.unit + 1);
    needed_upto_.emplace_back(static_cast<size_t>(units), 0);
    for (size_t b = layout.buckets.size(); b-- > 0;) {
      order_.push_back({c, b});
      for (size_t k : layout.buckets[b].params)
        needed_upto_[c][static_cast<size_t>(chunk.entries()[k].unit)] = order_.size() - 1;
    }
  }
  next_ = order_.size();
}

std::vector<ParamRef> OptimizerState::whole_params() const {
  std::vector<ParamRef> all;
  for (const ChunkBuffers& chunk : chunks_) all.insert(all.end(), chunk.params().begin(), chunk.params().end());
  return all;
}

const Tensor& OptimizerState::grad_sum_squares(const GridPosition& me, int stages) {
  std::vector<Tensor> counted;
  Communicator* group = groups_.model.get();
  if (!distributed_) {
    for (const ChunkBuffers& chunk : chunks_)
      for (const ParamRef& p : chunk.params())
        if (counts_in_grad_norm(p, me, stages)) counted.push_back(p.grad);
  } else {
    // Only this rank's shards hold summed gradients; the shards of the data-parallel ranks
    // partition every chunk, so the world's sum counts each element once.
    for (const ChunkShard& shard : shards_)
      for (const ParamRef& piece : shard.pieces)
        if (counts_in_grad_norm(piece, me, stages)) counted.push_back(piece.grad);
    group = groups_.world.get();
  }
  if (!sum_squares_.view.data) sum_squares_ = kernels_.allocate({1}, DType::F32);
  kernels_.sum_squares_into(counted, sum_squares_.view);
  if (group->size() > 1) group->all_reduce(sum_squares_.view, ReduceOp::Sum);
  return sum_squares_.view;
}

double OptimizerState::read_grad_norm() {
  float sum = 0;
  kernels_.copy_to_host(&sum, sum_squares_.view);
  return std::sqrt(static_cast<double>(sum));
}

void OptimizerState::gather(Communicator& data, size_t c, size_t b, const Tensor& shard, const Tensor& whole) {
  const BucketShard s = bucket_shard(chunks_[c].layout().buckets[b], data.rank(), data.size());
  const Tensor mine = shard.flat_slice(shards_[c].bucket_start[b], s.count);
  if (data.size() > 1) data.all_gather(mine, whole);
  else kernels_.copy(whole, mine);
}

void OptimizerState::step(const AdamStep& adam) {
  if (!distributed_) {
    kernels_.adam_step(whole_params(), adam);
    return;
  }
  take_all_weights();  // a step without a forward since the last one (none in training)
  std::vector<ParamRef> pieces;
  for (const ChunkShard& shard : shards_) pieces.insert(pieces.end(), shard.pieces.begin(), shard.pieces.end());
  kernels_.adam_step(pieces, adam);
  next_ = 0;
  if (lane_ && !order_.empty()) {
    // What the lane enqueues on the side stream follows the update; the gathers after the
    // first follow it on that stream.
    kernels_.side_waits_for_compute();
    pending_ = true;
    post_gather();
    return;
  }
  while (next_ < order_.size()) {
    const BucketRef r = order_[next_];
    const GradientBucket& bucket = chunks_[r.chunk].layout().buckets[r.bucket];
    const Tensor whole = chunks_[r.chunk].grad().flat_slice(bucket.offset, bucket.size);
    gather(*groups_.data, r.chunk, r.bucket, shards_[r.chunk].master.view, whole);
    kernels_.set_weights(bucket_params(chunks_[r.chunk], bucket, whole, Tensor{}, Tensor{}));
    ++next_;
  }
}

void OptimizerState::gather_on_lane(CommLane& lane, TimelineRecorder& timeline) {
  lane_ = &lane;
  timeline_ = &timeline;
}

void OptimizerState::post_gather() {
  const BucketRef r = order_[next_];
  const GradientBucket* bucket = &chunks_[r.chunk].layout().buckets[r.bucket];  // layouts never change
  const Tensor whole = chunks_[r.chunk].grad().flat_slice(bucket->offset, bucket->size);
  const Tensor shard = shards_[r.chunk].master.view;
  lane_->post([this, r, whole, shard] {
    timeline_->lane_span(fmt::format("weight all-gather {}.{}", r.chunk, r.bucket), "data-parallel",
                        [&] { gather(lane_->group(), r.chunk, r.bucket, shard, whole); });
  });
}

void OptimizerState::take_next() {
  const BucketRef r = order_[next_];
  const GradientBucket& bucket = chunks_[r.chunk].layout().buckets[r.bucket];
  const Tensor whole = chunks_[r.chunk].grad().flat_slice(bucket.offset, bucket.size);
  // Only this bucket's gather is on the lane: waiting for the lane waits for it.
  timeline_->span("wait for weights", "collective", [&] { lane_->wait_all(); });
  kernels_.compute_waits_for_side();
  kernels_.set_weights(bucket_params(chunks_[r.chunk], bucket, whole, Tensor{}, Tensor{}));
  kernels_.fill_zero(whole);  // for the backward to accumulate into
  if (++next_ < order_.size()) post_gather();
  else pending_ = false;
}

void OptimizerState::weights_needed(int chunk, int unit) {
  if (!pending_) return;
  const size_t upto = needed_upto_.at(static_cast<size_t>(chunk)).at(static_cast<size_t>(unit));
  while (pending_ && next_ <= upto) take_next();
}

void OptimizerState::take_all_weights() {
  while (pending_) take_next();
}

std::vector<ParamRef> OptimizerState::bucket_params(const ChunkBuffers& chunk, const GradientBucket& bucket,
                                                    const Tensor& master, const Tensor& exp_avg,
                                                    const Tensor& exp_avg_sq) const {
  auto view = [](const Tensor& buffer, int64_t at, const std::vector<int64_t>& shape) {
    return buffer.data ? buffer_view(buffer, at, shape) : Tensor{};
  };
  std::vector<ParamRef> params;
  for (size_t k : bucket.params) {
    ParamRef p = chunk.params()[k];
    const int64_t at = chunk.layout().offsets[k] - bucket.offset;
    const std::vector<int64_t> shape = p.master.shape;
    p.master = view(master, at, shape);
    p.exp_avg = view(exp_avg, at, shape);
    p.exp_avg_sq = view(exp_avg_sq, at, shape);
    params.push_back(std::move(p));
  }
  return params;
}

void OptimizerState::for_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn) {
  if (!distributed_) return fn(whole_params());
  take_all_weights();  // the lane's gathers are done before this thread's start
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const auto& buckets = chunks_[c].layout().buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const OwnedTensor master = kernels_.allocate({buckets[b].size}, DType::F32);
      const OwnedTensor m = kernels_.allocate({buckets[b].size}, DType::F32);
      const OwnedTensor v = kernels_.allocate({buckets[b].size}, DType::F32);
      gather(*groups_.data, c, b, shards_[c].master.view, master.view);
      gather(*groups_.data, c, b, shards_[c].exp_avg.view, m.view);
      gather(*groups_.data, c, b, shards_[c].exp_avg_sq.view, v.view);
      fn(bucket_params(chunks_[c], buckets[b], master.view, m.view, v.view));
      kernels_.synchronize();  // before the scratch buffers go
    }
  }
  kernels_.release_cached_memory();  // no step asks for buffers of a bucket's size
}

void OptimizerState::load_each_whole(const std::function<void(const std::vector<ParamRef>&)>& fn) {
  if (!distributed_) {
    fn(whole_params());
    kernels_.params_updated();
    return;
  }
  take_all_weights();  // the values loaded here replace them
  const int d = groups_.data->size(), r = groups_.data->rank();
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const auto& buckets = chunks_[c].layout().buckets;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const OwnedTensor master = kernels_.allocate({buckets[b].size}, DType::F32);
      const OwnedTensor m = kernels_.allocate({buckets[b].size}, DType::F32);
      const OwnedTensor v = kernels_.allocate({buckets[b].size}, DType::F32);
      const std::vector<ParamRef> params = bucket_params(chunks_[c], buckets[b], master.view, m.view, v.view);
      fn(params);
      const BucketShard s = bucket_shard(buckets[b], r, d);
      const int64_t at = shards_[c].bucket_start[b];
      const int64_t from = s.begin - buckets[b].offset;
      const ChunkShard& shard = shards_[c];
      kernels_.copy(shard.master.view.flat_slice(at, s.count), master.view.flat_slice(from, s.count));
      kernels_.copy(shard.exp_avg.view.flat_slice(at, s.count), m.view.flat_slice(from, s.count));
      kernels_.copy(shard.exp_avg_sq.view.flat_slice(at, s.count), v.view.flat_slice(from, s.count));
      kernels_.set_weights(params);
      kernels_.synchronize();  // before the scratch buffers go
    }
  }
  kernels_.release_cached_memory();  // no step asks for buffers of a bucket's size
}

}  // namespace ptdp
