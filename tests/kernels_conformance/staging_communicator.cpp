#include "staging_communicator.hpp"

#include <cstring>
#include <vector>

#include "activation_values.hpp"

namespace ptdp::conformance {

void StagingCommunicator::unused(const char* what) {
  throw Error(std::string("staging communicator: ") + what + " is not something a kernels plugin's layers need");
}

namespace {
Tensor host_f32(std::vector<float>& values) {
  return Tensor{values.data(), DType::F32, {static_cast<int64_t>(values.size())}, Device{MemoryKind::Host, 0}};
}
}  // namespace

std::vector<float> StagingCommunicator::staged(const Tensor& buffer, const char* what) const {
  if (!kernels_) throw Error("staging communicator: no kernels set for rank " + std::to_string(rank_));
  if (buffer.dtype != DType::F32 && buffer.dtype != DType::BF16 && buffer.dtype != DType::F16)
    throw Error(std::string("staging communicator: cannot ") + what + " " + dtype_name(buffer.dtype));
  return read_values(*kernels_, buffer);
}

void StagingCommunicator::all_reduce(Tensor buffer, ReduceOp op) {
  if (group_.size() == 1) return;
  std::vector<float> values = staged(buffer, "all-reduce");
  group_.rank(rank_)->all_reduce(host_f32(values), op);
  write_values(*kernels_, buffer, values);
}

void StagingCommunicator::reduce_scatter(const Tensor& input, Tensor output, ReduceOp op) {
  std::vector<float> in = staged(input, "reduce-scatter"), out(static_cast<size_t>(output.numel()));
  group_.rank(rank_)->reduce_scatter(host_f32(in), host_f32(out), op);
  write_values(*kernels_, output, out);
}

void StagingCommunicator::all_gather(const Tensor& input, Tensor output) {
  std::vector<float> in = staged(input, "all-gather"), out(static_cast<size_t>(output.numel()));
  group_.rank(rank_)->all_gather(host_f32(in), host_f32(out));
  write_values(*kernels_, output, out);
}

}  // namespace ptdp::conformance
