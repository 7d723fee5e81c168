#pragma once
// Global tensors and the parts of them that ranks hold, as described by ParamRef: along
// `shard_dim` a rank holds [shard_offset, shard_offset + local extent) of the global shape, and
// everything of the other dimensions (shard_dim -1: the whole tensor).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ptdp/layer_kernels.hpp>

namespace ptdp::test {

int64_t element_count(const std::vector<int64_t>& shape);

struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
using TensorMap = std::map<std::string, HostTensor>;

struct ShardLayout {
  std::string name;
  std::vector<int64_t> global_shape;
  int shard_dim = -1;
  int64_t shard_offset = 0;
  std::vector<int64_t> local_shape;
};

// The layout of what `param` holds (local shape from its master); throws ptdp::Error naming the
// parameter when the part does not fit in the global shape.
ShardLayout shard_layout(const ParamRef& param);

// This rank's part of a row-major global tensor.
std::vector<float> slice_global(const ShardLayout& layout, const std::vector<float>& global);
// Writes this rank's part into a row-major global tensor.
void place_local(const ShardLayout& layout, const std::vector<float>& local, std::vector<float>& global);

struct LocalTensor {
  ShardLayout layout;
  std::vector<float> values;
};

// The global tensors that the ranks' parts make up. Throws ptdp::Error when a part lies outside
// its tensor, when two ranks hold different values for the same element (replicated tensors
// must agree exactly), or when some element is held by no rank.
TensorMap assemble(const std::vector<std::vector<LocalTensor>>& per_rank);

}  // namespace ptdp::test
