#include "checkpoint/checkpoint_space.hpp"

#include <fmt/format.h>

namespace ptdp {

uint64_t checkpoint_step_bytes(const RunConfig::Model& m) {
  const uint64_t h = m.hidden, f = m.ffn_hidden, s = m.seq_len, l = m.layers;
  const uint64_t vocab = m.padded_vocab > 0 ? m.padded_vocab : m.vocab;
  // Per block: two LayerNorms (4h), QKV (3h² + 3h), projection (h² + h), fc1 (fh + f), fc2 (hf + h).
  const uint64_t per_block = 4 * h * h + 2 * f * h + 9 * h + f;
  // Word and position embeddings, the blocks, the final LayerNorm; the tied head adds nothing.
  const uint64_t elements = vocab * h + s * h + l * per_block + 2 * h;
  constexpr uint64_t kTensorsPerParameter = 3;  // weights, exp_avg, exp_avg_sq
  return elements * kTensorsPerParameter * sizeof(float);
}

std::string byte_size(uint64_t bytes) {
  if (bytes < 1000) return fmt::format("{} B", bytes);
  const char* units[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
  double value = static_cast<double>(bytes) / 1000;
  int unit = 0;
  while (value >= 1000 && unit < 5) {
    value /= 1000;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace ptdp
