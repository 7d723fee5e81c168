#pragma once
// Zero-filled, cache-line aligned host allocations: this backend's "device" memory.
#include <cstdint>
#include <vector>

#include <ptdp/tensor.hpp>

namespace ptdp::kref {

OwnedTensor allocate_host(const std::vector<int64_t>& shape, DType dtype);

}  // namespace ptdp::kref
