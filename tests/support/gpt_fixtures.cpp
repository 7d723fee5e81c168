#include "support/gpt_fixtures.hpp"

#include <string>

#include <ptdp/counter_rng.hpp>

namespace ptdp::test {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

TensorMap make_initial_weights(const std::vector<ParamRef>& params, uint64_t seed) {
  TensorMap out;
  for (const ParamRef& p : params) {
    const bool layer_norm = p.name.find(".ln") != std::string::npos;
    const bool bias = ends_with(p.name, ".bias");
    const float mean = layer_norm && !bias ? 1.0f : 0.0f;
    float stddev = 0.08f;
    if (layer_norm)
      stddev = 0.2f;
    else if (bias)
      stddev = 0.05f;
    else if (p.name.rfind("embedding.", 0) == 0)
      stddev = 0.3f;
    HostTensor t{p.global_shape, std::vector<float>(static_cast<size_t>(element_count(p.global_shape)))};
    const uint64_t key = rng::name_key(seed, p.name);
    for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = mean + stddev * rng::normal(key, 0, i);
    out[p.name] = std::move(t);
  }
  return out;
}

TokenBatch make_token_batch(const ModelSpec& model, uint64_t seed, int64_t index) {
  const size_t n = static_cast<size_t>(model.seq_len) * model.micro_batch;
  TokenBatch b{std::vector<int32_t>(n), std::vector<int32_t>(n)};
  const uint64_t tokens = rng::name_key(seed, "tokens"), targets = rng::name_key(seed, "targets");
  for (size_t i = 0; i < n; ++i) {
    b.tokens[i] = static_cast<int32_t>(rng::philox(tokens, index, i).v[0] % model.vocab);
    b.targets[i] = static_cast<int32_t>(rng::philox(targets, index, i).v[0] % model.vocab);
  }
  return b;
}

}  // namespace ptdp::test
