#pragma once
// One learnable tensor: this rank's part of the fp32 master weights, with its gradient and Adam
// moments. The master is also the working copy (this backend computes in fp32).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "partition.hpp"

namespace ptdp::kref {

struct Parameter {
  ParamRef ref;                      // views into `storage`, or into the core's buffers once placed
  std::vector<OwnedTensor> storage;  // master, grad, exp_avg, exp_avg_sq; empty once placed

  float* value() const { return ref.master.as<float>(); }
  float* grad() const { return ref.grad.as<float>(); }
};

// The parameters one backend made, by name, for place_parameters.
class ParameterRegistry {
 public:
  void add(const std::shared_ptr<Parameter>& parameter);
  // Moves each listed parameter's master (values copied) and gradient to the given places and
  // frees the parameter's own memory; a name this backend did not make, or made twice, is an error.
  void place(const std::vector<ParamRef>& params);

 private:
  std::multimap<std::string, std::weak_ptr<Parameter>> by_name_;
};

// Held whole by every tensor-parallel rank (LayerNorm, biases added after an all-reduce,
// position embedding).
std::shared_ptr<Parameter> replicated_parameter(std::string name, std::vector<int64_t> shape,
                                                bool weight_decay, const Partition& partition);

// Split evenly over the tensor-parallel group along `dim` of its global shape; this rank holds
// the rank-th slice.
std::shared_ptr<Parameter> sharded_parameter(std::string name, std::vector<int64_t> global_shape,
                                             int dim, const Partition& partition, bool weight_decay);

}  // namespace ptdp::kref
