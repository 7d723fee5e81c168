#pragma once
// Generation from a trained model on one rank: each new token is drawn from the logits at the
// last position of the context (the newest s tokens), with temperature and top-k. The draw for
// the token at text position i uses a uniform number keyed by (seed, i) (counter_rng.hpp): the
// same seed gives the same text, and continuing a prompt with part of its own output gives the
// rest of that output.
#include <cstdint>
#include <functional>
#include <vector>

#include <ptdp/layer_kernels.hpp>

#include "runtime/model_chunk.hpp"

namespace ptdp {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // at least one token
  int new_tokens = 0;
  float temperature = 1.0f;     // 0: always the most likely token
  int top_k = 0;                // > 0: draw among the k most likely only
  uint64_t seed = 0;
};

// The next token from one position's logits over ids [0, logits.size()), given a uniform number
// u in (0, 1]: the first of the candidates, most likely first, whose cumulative probability
// reaches u.
int32_t pick_token(const std::vector<float>& logits, float temperature, int top_k, float u);

// Called with each new token as it is made, and the logits (ids [0, vocab)) it was drawn from.
using TokenCallback = std::function<void(int32_t token, const std::vector<float>& logits)>;

// Runs `model` (the whole model, micro_batch 1, one rank); returns the new tokens.
std::vector<int32_t> generate(LayerKernels& kernels, ModelChunk& model, const ModelSpec& spec,
                              const GenerationRequest& request, const TokenCallback& on_token);

}  // namespace ptdp
