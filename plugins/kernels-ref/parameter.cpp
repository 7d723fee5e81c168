#include "parameter.hpp"

#include <cstring>
#include <utility>

#include "host_memory.hpp"
#include "tensor_checks.hpp"

namespace ptdp::kref {

void ParameterRegistry::add(const std::shared_ptr<Parameter>& parameter) {
  by_name_.emplace(parameter->ref.name, parameter);
}

std::shared_ptr<Parameter> ParameterRegistry::find(const std::string& name, const std::string& who) const {
  std::shared_ptr<Parameter> match;
  const auto [begin, end] = by_name_.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    auto live = it->second.lock();
    if (!live) continue;
    if (match) throw Error("kernels-ref: " + who + ": this backend holds two parameters named '" + name + "'");
    match = live;
  }
  if (!match) throw Error("kernels-ref: " + who + ": no parameter named '" + name + "'");
  return match;
}

void ParameterRegistry::place(const std::vector<ParamRef>& params) {
  std::vector<std::pair<std::shared_ptr<Parameter>, const ParamRef*>> found;
  for (const ParamRef& want : params) {
    std::shared_ptr<Parameter> match = find(want.name, "place_parameters");
    if (want.master.data) check_host_tensor(want.master, DType::F32, match->ref.master.shape, want.name + " placed master");
    else if (want.master.shape != match->ref.master.shape)
      throw Error("kernels-ref: place_parameters: " + want.name + " placed with an empty master of shape " +
                  shape_string(want.master.shape) + ", expected " + shape_string(match->ref.master.shape));
    check_host_tensor(want.grad, DType::F32, match->ref.master.shape, want.name + " placed grad");
    found.emplace_back(match, &want);
  }
  // Checked whole before anything moves, so a bad list leaves every parameter as it was.
  for (auto& [parameter, want] : found) {
    if (want->master.data) {
      std::memmove(want->master.data, parameter->ref.master.data, parameter->ref.master.bytes());
      parameter->ref.master = want->master;
      parameter->storage.clear();
    } else {
      parameter->storage.resize(1);  // the master, which this backend computes from
    }
    parameter->ref.grad = want->grad;
    parameter->ref.exp_avg = Tensor{};
    parameter->ref.exp_avg_sq = Tensor{};
  }
}

void ParameterRegistry::set_weights(const std::vector<ParamRef>& params) {
  std::vector<std::pair<std::shared_ptr<Parameter>, const ParamRef*>> found;
  for (const ParamRef& given : params) {
    std::shared_ptr<Parameter> match = find(given.name, "set_weights");
    if (match->storage.size() != 1)
      throw Error("kernels-ref: set_weights: " + given.name + " was not placed with an empty master");
    check_host_tensor(given.master, DType::F32, match->ref.master.shape, given.name + " weights");
    found.emplace_back(match, &given);
  }
  for (auto& [parameter, given] : found)
    std::memcpy(parameter->ref.master.data, given->master.data, parameter->ref.master.bytes());
}

std::shared_ptr<Parameter> make_parameter(const GptParameterShape& shape, const Partition& partition) {
  auto p = std::make_shared<Parameter>();
  // Adam moments only for use without the core, which places every parameter and keeps its own
  // (KernelsBinding::core_places_parameters): its buffers are allocated while these are held.
  const int tensors = partition.core_places_parameters ? 2 : 4;
  for (int i = 0; i < tensors; ++i) p->storage.push_back(allocate_host(shape.local, DType::F32));
  p->ref.name = shape.name;
  p->ref.global_shape = shape.global;
  p->ref.shard_dim = shape.shard_dim;
  p->ref.shard_offset = shape.shard_offset;
  p->ref.master = p->storage[0].view;
  p->ref.grad = p->storage[1].view;
  if (tensors == 4) {
    p->ref.exp_avg = p->storage[2].view;
    p->ref.exp_avg_sq = p->storage[3].view;
  }
  p->ref.weight_decay = shape.decay;
  partition.parameters->add(p);
  return p;
}

}  // namespace ptdp::kref
