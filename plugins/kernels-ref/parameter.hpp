#pragma once
// One learnable tensor: this rank's part of the fp32 master weights, with its gradient and Adam
// moments. The master is also the working copy (this backend computes in fp32).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ptdp/gpt_parameters.hpp>
#include <ptdp/layer_kernels.hpp>

#include "partition.hpp"

namespace ptdp::kref {

struct Parameter {
  ParamRef ref;                      // views into `storage`, or into the core's buffers once placed
  std::vector<OwnedTensor> storage;  // master, grad[, exp_avg, exp_avg_sq]; once placed, empty, or
                                     // only the master where the core keeps none (set_weights)

  float* value() const { return ref.master.as<float>(); }
  float* grad() const { return ref.grad.as<float>(); }
};

// The parameters one backend made, by name, for place_parameters.
class ParameterRegistry {
 public:
  void add(const std::shared_ptr<Parameter>& parameter);
  // Moves each listed parameter's master (values copied) and gradient to the given places and
  // frees the parameter's own memory; a name this backend did not make, or made twice, is an error.
  // A parameter placed with an empty master keeps its own, which set_weights then writes.
  void place(const std::vector<ParamRef>& params);
  // Copies params[i].master into the own master of the parameter named params[i].name.
  void set_weights(const std::vector<ParamRef>& params);

 private:
  // The one live parameter named `name`; `who` prefixes the error when there is none or two.
  std::shared_ptr<Parameter> find(const std::string& name, const std::string& who) const;
  std::multimap<std::string, std::weak_ptr<Parameter>> by_name_;
};

// This rank's part of one parameter of the table in ptdp/gpt_parameters.hpp, registered with
// the partition's registry.
std::shared_ptr<Parameter> make_parameter(const GptParameterShape& shape, const Partition& partition);

}  // namespace ptdp::kref
