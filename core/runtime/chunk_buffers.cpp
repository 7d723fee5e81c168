#include "runtime/chunk_buffers.hpp"

namespace ptdp {

Tensor buffer_view(const Tensor& buffer, int64_t offset, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  Tensor view = buffer.flat_slice(offset, count);
  view.shape = shape;
  return view;
}

ChunkBuffers::ChunkBuffers(LayerKernels& kernels, std::vector<ParamRef> params, const std::vector<int>& units,
                           bool tied_alone, int64_t bucket_elements, int data_parallel, bool whole_master)
    : params_(std::move(params)) {
  PTDP_CHECK(units.size() == params_.size(), "ChunkBuffers: one layer index per parameter");
  for (size_t k = 0; k < params_.size(); ++k)
    entries_.push_back({params_[k].master.numel(), units[k], tied_alone && params_[k].name == "embedding.word"});
  layout_ = plan_buffer_layout(entries_, bucket_elements, data_parallel);
  if (whole_master) master_ = kernels.allocate({layout_.size}, DType::F32);
  grad_ = kernels.allocate({layout_.size}, DType::F32);
  for (size_t k = 0; k < params_.size(); ++k) {
    if (whole_master) params_[k].master = buffer_view(master_.view, layout_.offsets[k], params_[k].master.shape);
    else params_[k].master.data = nullptr;  // the shape stays: it is the parameter's
    params_[k].grad = buffer_view(grad_.view, layout_.offsets[k], params_[k].master.shape);
    params_[k].exp_avg = Tensor{};
    params_[k].exp_avg_sq = Tensor{};
  }
}

}  // namespace ptdp
