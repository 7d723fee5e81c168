#include "tensor_checks.hpp"

namespace ptdp::kref {

void check_host_memory(const Tensor& t, const std::string& what) {
  if (t.device.kind != MemoryKind::Host)
    throw Error("kernels-ref: " + what + " is not in host memory (this backend runs on the CPU)");
  if (t.data == nullptr && t.numel() > 0) throw Error("kernels-ref: " + what + " has no data");
}

void check_host_tensor(const Tensor& t, DType dtype, const std::vector<int64_t>& shape,
                       const std::string& what) {
  check_host_memory(t, what);
  if (t.dtype != dtype || t.shape != shape)
    throw Error("kernels-ref: " + what + " must be " + dtype_name(dtype) + " " + shape_string(shape) +
                ", got " + dtype_name(t.dtype) + " " + shape_string(t.shape));
}

void check_token_ids(const int32_t* ids, int64_t seq, int64_t batch, int64_t vocab,
                     const std::string& what) {
  for (int64_t pos = 0; pos < seq; ++pos)
    for (int64_t j = 0; j < batch; ++j) {
      const int32_t id = ids[pos * batch + j];
      if (id < 0 || id >= vocab)
        throw Error("kernels-ref: " + what + ": id " + std::to_string(id) + " at position " +
                    std::to_string(pos) + " of sequence " + std::to_string(j) +
                    " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
}

}  // namespace ptdp::kref
