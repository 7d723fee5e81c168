#pragma once
// One model chunk's fp32 master weights and gradients, each one buffer laid out by
// plan_buffer_layout. Once the kernels backend is told (place_parameters), every parameter's
// master and gradient are views into these buffers: buckets are ranges of the gradient buffer,
// reduced in place, with no copies in or out. Under the distributed optimizer there is no whole
// master buffer: each parameter's master is empty (its shape kept), and the optimizer keeps this
// rank's shard of every bucket.
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/buffer_layout.hpp"

namespace ptdp {

class ChunkBuffers {
 public:
  // params: the chunk's parameters as its layers listed them; units: the layer of each (forward
  // order); the tied word embedding gets a bucket of its own when tied_alone; whole_master: false
  // under the distributed optimizer.
  ChunkBuffers(LayerKernels& kernels, std::vector<ParamRef> params, const std::vector<int>& units, bool tied_alone,
               int64_t bucket_elements, int data_parallel, bool whole_master);

  // Master (unless empty) and grad of each are views into the buffers; moments are whatever the
  // optimizer set.
  std::vector<ParamRef>& params() { return params_; }
  const std::vector<ParamRef>& params() const { return params_; }
  const std::vector<LayoutEntry>& entries() const { return entries_; }
  const BufferLayout& layout() const { return layout_; }
  const Tensor& grad() const { return grad_.view; }

 private:
  std::vector<ParamRef> params_;
  std::vector<LayoutEntry> entries_;
  BufferLayout layout_;
  OwnedTensor master_, grad_;
};

// A view of `count` elements at `offset` of a flat buffer, with `shape`.
Tensor buffer_view(const Tensor& buffer, int64_t offset, const std::vector<int64_t>& shape);

}  // namespace ptdp
