#include "runtime/gradient_sync.hpp"

#include <cmath>

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

void all_reduce_data_parallel(LayerKernels& kernels, Communicator& data_group, const std::vector<ParamRef>& params,
                              int64_t bucket_elements) {
  if (data_group.size() == 1) return;
  OwnedTensor bucket = kernels.allocate({bucket_elements}, DType::F32);
  std::vector<const ParamRef*> packed;
  int64_t used = 0;
  auto flush = [&] {
    if (packed.empty()) return;
    int64_t offset = 0;
    for (const ParamRef* p : packed) {
      kernels.copy(bucket.view.flat_slice(offset, p->grad.numel()), p->grad);
      offset += p->grad.numel();
    }
    data_group.all_reduce(bucket.view.flat_slice(0, used), ReduceOp::Sum);
    offset = 0;
    for (const ParamRef* p : packed) {
      Tensor dst = p->grad;
      kernels.copy(dst, bucket.view.flat_slice(offset, p->grad.numel()));
      offset += p->grad.numel();
    }
    packed.clear();
    used = 0;
  };
  // Reverse order: the last layers' gradients are complete first, as a backward overlapping
  // implementation would see them.
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const int64_t n = it->grad.numel();
    if (n > bucket_elements) {
      data_group.all_reduce(it->grad, ReduceOp::Sum);
      continue;
    }
    if (used + n > bucket_elements) flush();
    packed.push_back(&*it);
    used += n;
  }
  flush();
}

void sync_tied_embedding(LayerKernels&, Communicator& embedding_group, const std::vector<ParamRef>& params) {
  for (const ParamRef& p : params)
    if (p.name == "embedding.word") embedding_group.all_reduce(p.grad, ReduceOp::Sum);
}

double global_grad_norm(LayerKernels& kernels, const ParallelGroups& groups, const GridPosition& me, int stages,
                        const std::vector<ParamRef>& params) {
  std::vector<Tensor> counted;
  for (const ParamRef& p : params) {
    if (p.shard_dim < 0 && me.tp != 0) continue;
    if (p.name == "embedding.word" && stages > 1 && me.pp == stages - 1) continue;
    counted.push_back(p.grad);
  }
  const double local = kernels.sum_squares(counted);
  return std::sqrt(all_reduce_scalar(kernels, *groups.model, local, ReduceOp::Sum));
}

}  // namespace ptdp
