#include "host_memory.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace ptdp::kref {

OwnedTensor allocate_host(const std::vector<int64_t>& shape, DType dtype) {
  for (int64_t d : shape)
    PTDP_CHECK(d >= 0, "kernels-ref: cannot allocate a tensor of shape " + shape_string(shape));
  Tensor view{nullptr, dtype, shape, Device{MemoryKind::Host, 0}};
  constexpr size_t kAlign = 64;
  // aligned_alloc wants a multiple of the alignment, and at least one block so data is never null.
  size_t bytes = (view.bytes() + kAlign - 1) / kAlign * kAlign;
  if (bytes == 0) bytes = kAlign;
  void* data = std::aligned_alloc(kAlign, bytes);
  if (data == nullptr)
    throw Error("kernels-ref: out of host memory allocating " + std::to_string(bytes) +
                " bytes for a tensor of shape " + shape_string(shape));
  std::memset(data, 0, bytes);
  view.data = data;
  return OwnedTensor{view, std::shared_ptr<void>(data, [](void* p) { std::free(p); })};
}

}  // namespace ptdp::kref
