#include "vocab_parallel_cross_entropy.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace ptdp::kref {

void vocab_parallel_cross_entropy_forward(float* losses, float* logsumexp, const float* logits,
                                          const int32_t* targets, int64_t n, const Partition& part) {
  const int64_t width = part.local_vocab(), valid = part.valid_vocab(), begin = part.vocab_begin();
  // A shard of padding only contributes -inf to the max and nothing to the sums.
  std::vector<float> max(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < valid; ++c) max[i] = std::fmax(max[i], logits[i * width + c]);
  part.all_reduce(max.data(), n, ReduceOp::Max);

  // [sum of exp(logit - max) | target logit], reduced together.
  std::vector<float> sums(static_cast<size_t>(2 * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * width;
    double sum = 0.0;
    for (int64_t c = 0; c < valid; ++c) sum += std::exp(row[c] - max[i]);
    sums[i] = static_cast<float>(sum);
    const int64_t t = targets[i] - begin;
    if (t >= 0 && t < valid) sums[n + i] = row[t];
  }
  part.all_reduce(sums.data(), 2 * n, ReduceOp::Sum);

  for (int64_t i = 0; i < n; ++i) {
    logsumexp[i] = max[i] + std::log(sums[i]);
    losses[i] = logsumexp[i] - sums[n + i];
  }
}

void vocab_parallel_cross_entropy_backward(float* dlogits, const float* logits, const float* logsumexp,
                                           const int32_t* targets, float dloss, int64_t n,
                                           const Partition& part) {
  const int64_t width = part.local_vocab(), valid = part.valid_vocab(), begin = part.vocab_begin();
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * width;
    float* drow = dlogits + i * width;
    for (int64_t c = 0; c < valid; ++c) drow[c] = dloss * std::exp(row[c] - logsumexp[i]);
    for (int64_t c = valid; c < width; ++c) drow[c] = 0.0f;
    const int64_t t = targets[i] - begin;
    if (t >= 0 && t < valid) drow[t] -= dloss;
  }
}

}  // namespace ptdp::kref
