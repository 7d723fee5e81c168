#include "runtime/text_generation.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <ptdp/counter_rng.hpp>
#include <ptdp/error.hpp>

namespace ptdp {

int32_t pick_token(const std::vector<float>& logits, float temperature, int top_k, float u) {
  PTDP_CHECK(!logits.empty(), "no logits to pick a token from");
  if (temperature <= 0.0f) return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t keep = top_k > 0 ? std::min<size_t>(top_k, ids.size()) : ids.size();
  // Ties keep the lower id first, so a run does not depend on the sort's implementation.
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  ids.resize(keep);
  const double top = logits[ids.front()];
  std::vector<double> cumulative;
  double total = 0;
  for (int32_t id : ids) cumulative.push_back(total += std::exp((logits[id] - top) / temperature));
  const size_t at = std::lower_bound(cumulative.begin(), cumulative.end(), u * total) - cumulative.begin();
  return ids[std::min(at, ids.size() - 1)];
}

std::vector<int32_t> generate(LayerKernels& kernels, ModelChunk& model, const ModelSpec& spec,
                              const GenerationRequest& request, const TokenCallback& on_token) {
  PTDP_CHECK(spec.micro_batch == 1, "generation runs one sequence (micro_batch 1)");
  PTDP_CHECK(!request.prompt.empty(), "generation needs a prompt of at least one token");
  const int64_t s = spec.seq_len;
  const int64_t rows = spec.padded_vocab;  // one rank: its shard is the whole padded vocabulary
  std::vector<int32_t> text = request.prompt, made;
  std::vector<int32_t> window(s, 0);
  const Tensor tokens{window.data(), DType::I32, {s, 1}, Device{}};
  OwnedTensor logits = kernels.allocate({s, 1, rows}, DType::F32);
  std::vector<float> row(spec.vocab);
  const uint64_t key = rng::name_key(request.seed, "sample");
  for (int i = 0; i < request.new_tokens; ++i) {
    // Causal attention: positions after the context's last do not change its logits, so the
    // window's tail may hold anything.
    const int64_t used = std::min<int64_t>(s, text.size());
    std::fill(window.begin(), window.end(), 0);
    std::copy(text.end() - used, text.end(), window.begin());
    model.logits(MicroBatch{0, 0, 0, false}, tokens, logits.view);
    kernels.copy_to_host(row.data(), logits.view.flat_slice((used - 1) * rows, spec.vocab));
    // A diverged model's logits are not a distribution: drawing from them prints garbage.
    for (float v : row)
      if (!std::isfinite(v))
        throw Error("the model's logits hold " + std::to_string(v) + " after " + std::to_string(text.size()) +
                    " tokens: its weights give no finite output (a diverged step?)");
    const int32_t next = pick_token(row, request.temperature, request.top_k, rng::uniform(key, 0, text.size()));
    text.push_back(next);
    made.push_back(next);
    if (on_token) on_token(next, row);
  }
  return made;
}

}  // namespace ptdp
