#include "parameter.hpp"

#include <cstring>
#include <utility>

#include "host_memory.hpp"
#include "tensor_checks.hpp"

namespace ptdp::kref {

namespace {

std::shared_ptr<Parameter> make_parameter(std::string name, std::vector<int64_t> global_shape,
                                          int shard_dim, int64_t shard_offset,
                                          const std::vector<int64_t>& local_shape, bool weight_decay,
                                          const Partition& partition) {
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
  partition.parameters->add(p);
  return p;
}

}  // namespace

void ParameterRegistry::add(const std::shared_ptr<Parameter>& parameter) {
  by_name_.emplace(parameter->ref.name, parameter);
}

void ParameterRegistry::place(const std::vector<ParamRef>& params) {
  std::vector<std::pair<std::shared_ptr<Parameter>, const ParamRef*>> found;
  for (const ParamRef& want : params) {
    std::shared_ptr<Parameter> match;
    const auto [begin, end] = by_name_.equal_range(want.name);
    for (auto it = begin; it != end; ++it) {
      auto live = it->second.lock();
      if (!live) continue;
      if (match) throw Error("kernels-ref: place_parameters: this backend holds two parameters named '" + want.name + "'");
      match = live;
    }
    if (!match) throw Error("kernels-ref: place_parameters: no parameter named '" + want.name + "'");
    check_host_tensor(want.master, DType::F32, match->ref.master.shape, want.name + " placed master");
    check_host_tensor(want.grad, DType::F32, match->ref.master.shape, want.name + " placed grad");
    found.emplace_back(match, &want);
  }
  // Checked whole before anything moves, so a bad list leaves every parameter as it was.
  for (auto& [parameter, want] : found) {
    std::memmove(want->master.data, parameter->ref.master.data, parameter->ref.master.bytes());
    parameter->ref.master = want->master;
    parameter->ref.grad = want->grad;
    parameter->ref.exp_avg = Tensor{};
    parameter->ref.exp_avg_sq = Tensor{};
    parameter->storage.clear();
  }
}

std::shared_ptr<Parameter> replicated_parameter(std::string name, std::vector<int64_t> shape,
                                                bool weight_decay, const Partition& partition) {
  std::vector<int64_t> local = shape;
  return make_parameter(std::move(name), std::move(shape), -1, 0, local, weight_decay, partition);
}

std::shared_ptr<Parameter> sharded_parameter(std::string name, std::vector<int64_t> global_shape,
                                             int dim, const Partition& partition, bool weight_decay) {
  std::vector<int64_t> local = global_shape;
  local[dim] /= partition.size;
  int64_t offset = local[dim] * partition.rank;
  return make_parameter(std::move(name), std::move(global_shape), dim, offset, local, weight_decay, partition);
}

}  // namespace ptdp::kref
