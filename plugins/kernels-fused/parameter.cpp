#include "parameter.hpp"

#include "ptdp/checked_call_cuda.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

Parameter::Parameter(const ParameterSpec& spec, DeviceArena& arena, int device, cudaStream_t stream,
                     bool keeps_moments)
    : spec_(spec), device_(device), keeps_moments_(keeps_moments) {
  numel_ = 1;
  for (int64_t d : spec_.local_shape) numel_ *= d;
  stride_ = (numel_ + 63) / 64 * 64;
  // Moments start at zero and so does the master until the core initializes it.
  const size_t parts = keeps_moments ? 4 : 2;
  state_ = arena.allocate(parts * stride_ * sizeof(float));
  PTDP_CALL(cudaMemsetAsync(state_.get(), 0, parts * stride_ * sizeof(float), stream));
  master_ = base();
  grad_ = base() + stride_;
  if (spec_.working_copy) {
    working_ = arena.allocate(size_t(numel_) * sizeof(act_t));
    PTDP_CALL(cudaMemsetAsync(working_.get(), 0, size_t(numel_) * sizeof(act_t), stream));
  }
}

ParamRef Parameter::ref() const {
  auto view = [this](float* data) {
    Tensor t;
    t.data = data;
    t.dtype = DType::F32;
    t.shape = spec_.local_shape;
    t.device = Device{MemoryKind::Cuda, device_};
    return t;
  };
  ParamRef r;
  r.name = spec_.name;
  r.global_shape = spec_.global_shape;
  r.shard_dim = spec_.shard_dim;
  r.shard_offset = spec_.shard_offset;
  r.master = view(master());
  r.grad = view(grad());
  if (exp_avg()) {
    r.exp_avg = view(exp_avg());
    r.exp_avg_sq = view(exp_avg_sq());
  }
  r.weight_decay = spec_.weight_decay;
  return r;
}

void Parameter::place(float* master, float* grad, DeviceArena& arena, cudaStream_t stream) {
  placed_without_master_ = master == nullptr;
  if (placed_without_master_ && spec_.fp32_reads && numel_ > 0) {
    own_master_ = arena.allocate(size_t(numel_) * sizeof(float));
    master = static_cast<float*>(own_master_.get());
  }
  if (placed_without_master_ && spec_.working_copy_without_master && !working_ && numel_ > 0) {
    working_ = arena.allocate(size_t(numel_) * sizeof(act_t));  // set_weights fills it
    PTDP_CALL(cudaMemsetAsync(working_.get(), 0, size_t(numel_) * sizeof(act_t), stream));
  }
  if (master)
    PTDP_CALL(cudaMemcpyAsync(master, master_, size_t(numel_) * sizeof(float), cudaMemcpyDeviceToDevice, stream));
  master_ = master;
  grad_ = grad;
  // Released once the copy above has read it: the arena's next user of the block queues behind it.
  state_.reset();
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
