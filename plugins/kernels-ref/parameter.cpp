#include "parameter.hpp"

#include <utility>

#include "host_memory.hpp"

namespace ptdp::kref {

namespace {

std::shared_ptr<Parameter> make_parameter(std::string name, std::vector<int64_t> global_shape,
                                          int shard_dim, int64_t shard_offset,
                                          const std::vector<int64_t>& local_shape, bool weight_decay) {
  auto p = std::make_shared<Parameter>();
  for (int i = 0; i < 4; ++i) p->storage.push_back(allocate_host(local_shape, DType::F32));
  p->ref.name = std::move(name);
  p->ref.global_shape = std::move(global_shape);
  p->ref.shard_dim = shard_dim;
  p->ref.shard_offset = shard_offset;
  p->ref.master = p->storage[0].view;
  p->ref.grad = p->storage[1].view;
  p->ref.exp_avg = p->storage[2].view;
  p->ref.exp_avg_sq = p->storage[3].view;
  p->ref.weight_decay = weight_decay;
  return p;
}

}  // namespace

std::shared_ptr<Parameter> replicated_parameter(std::string name, std::vector<int64_t> shape,
                                                bool weight_decay) {
  std::vector<int64_t> local = shape;
  return make_parameter(std::move(name), std::move(shape), -1, 0, local, weight_decay);
}

std::shared_ptr<Parameter> sharded_parameter(std::string name, std::vector<int64_t> global_shape,
                                             int dim, const Partition& partition, bool weight_decay) {
  std::vector<int64_t> local = global_shape;
  local[dim] /= partition.size;
  int64_t offset = local[dim] * partition.rank;
  return make_parameter(std::move(name), std::move(global_shape), dim, offset, local, weight_decay);
}

}  // namespace ptdp::kref
