#pragma once
// Deterministic inputs for model tests: initial weights made per global tensor (so every layout
// starts from the same model) and token batches.
#include <cstdint>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "support/shard.hpp"

namespace ptdp::test {

struct TokenBatch {
  std::vector<int32_t> tokens;   // [s, b], position-major
  std::vector<int32_t> targets;  // [s, b]
};

// Global values for every parameter (by name and global shape): LayerNorm weights near 1, the
// rest small and nonzero, biases included, so that every gradient path carries signal.
TensorMap make_initial_weights(const std::vector<ParamRef>& params, uint64_t seed);

// Batch number `index`: uniform ids in [0, model.vocab).
TokenBatch make_token_batch(const ModelSpec& model, uint64_t seed, int64_t index);

}  // namespace ptdp::test
