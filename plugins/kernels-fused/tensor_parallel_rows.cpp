#include "tensor_parallel_rows.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

TensorParallelRows::TensorParallelRows(Communicator* group, bool sequence_parallel, const ModelSpec& model, int device,
                                       DeviceArena& arena)
    : regions_(group, sequence_parallel), model_(model), device_(device), arena_(arena) {}

Tensor TensorParallelRows::rows(const act_t* data, int64_t count, int64_t cols) const {
  Tensor t;
  t.data = const_cast<act_t*>(data);
  t.dtype = kActDType;
  t.shape = {count, cols};
  t.device = Device{MemoryKind::Cuda, device_};
  return t;
}

act_t* TensorParallelRows::allocate(DeviceBuffer<act_t>& buffer, int64_t count, int64_t cols) {
  buffer = allocate_buffer<act_t>(arena_, size_t(count * cols));
  return buffer.get();
}

const act_t* TensorParallelRows::column_parallel_input(const act_t* local, DeviceBuffer<act_t>& whole, int64_t cols) {
  if (!sequence_parallel()) return local;
  act_t* all = allocate(whole, tokens(), cols);
  return regions_.column_parallel_input(rows(local, local_tokens(), cols), rows(all, tokens(), cols)).as<act_t>();
}

act_t* TensorParallelRows::column_parallel_input_grad(act_t* whole_grad, DeviceBuffer<act_t>& local, int64_t cols) {
  act_t* mine = sequence_parallel() ? allocate(local, local_tokens(), cols) : nullptr;
  return regions_.column_parallel_input_grad(rows(whole_grad, tokens(), cols), rows(mine, local_tokens(), cols))
      .as<act_t>();
}

act_t* TensorParallelRows::row_parallel_output(act_t* partial, DeviceBuffer<act_t>& local, int64_t cols) {
  act_t* mine = sequence_parallel() ? allocate(local, local_tokens(), cols) : nullptr;
  return regions_.row_parallel_output(rows(partial, tokens(), cols), rows(mine, local_tokens(), cols)).as<act_t>();
}

const act_t* TensorParallelRows::row_parallel_output_grad(const act_t* local_grad, DeviceBuffer<act_t>& whole,
                                                          int64_t cols) {
  if (!sequence_parallel()) return local_grad;
  act_t* all = allocate(whole, tokens(), cols);
  return regions_.row_parallel_output_grad(rows(local_grad, local_tokens(), cols), rows(all, tokens(), cols))
      .as<act_t>();
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
