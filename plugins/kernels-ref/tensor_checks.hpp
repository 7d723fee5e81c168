#pragma once
// Validation of what callers hand to a layer, with messages that name the layer, the argument
// and what was expected.
#include <cstdint>
#include <string>
#include <vector>

#include <ptdp/tensor.hpp>

namespace ptdp::kref {

void check_host_tensor(const Tensor& t, DType dtype, const std::vector<int64_t>& shape,
                       const std::string& what);

// For the generic memory operations, where any shape is fine but the memory must be the host's.
void check_host_memory(const Tensor& t, const std::string& what);

// ids: [s, b] token ids; each must be a real token in [0, vocab).
void check_token_ids(const int32_t* ids, int64_t seq, int64_t batch, int64_t vocab,
                     const std::string& what);

}  // namespace ptdp::kref
