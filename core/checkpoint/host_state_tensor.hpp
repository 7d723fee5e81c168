#pragma once
// A whole tensor of run state that is no parameter (the FP8 recipe's amax history), in host
// memory, as checkpoints save and load it.
#include <cstdint>
#include <string>
#include <vector>

namespace ptdp {

struct HostStateTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

}  // namespace ptdp
