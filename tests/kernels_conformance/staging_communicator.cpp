#include "staging_communicator.hpp"

#include <cstring>
#include <vector>

#include "activation_values.hpp"

namespace ptdp::conformance {

void StagingCommunicator::unused(const char* what) {
  throw Error(std::string("staging communicator: ") + what + " is not something a kernels plugin's layers need");
}

void StagingCommunicator::all_reduce(Tensor buffer, ReduceOp op) {
  if (group_.size() == 1) return;
  if (!kernels_) throw Error("staging communicator: no kernels set for rank " + std::to_string(rank_));
  if (buffer.dtype != DType::F32 && buffer.dtype != DType::BF16 && buffer.dtype != DType::F16)
    throw Error(std::string("staging communicator: cannot all-reduce ") + dtype_name(buffer.dtype));
  std::vector<float> values = read_values(*kernels_, buffer);
  Tensor host{values.data(), DType::F32, {static_cast<int64_t>(values.size())}, Device{MemoryKind::Host, 0}};
  group_.rank(rank_)->all_reduce(host, op);
  write_values(*kernels_, buffer, values);
}

}  // namespace ptdp::conformance
