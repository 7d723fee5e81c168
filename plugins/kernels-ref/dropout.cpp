#include "dropout.hpp"

#include <ptdp/counter_rng.hpp>

namespace ptdp::kref {

void apply_dropout(float* x, const ModelSpec& model, const MicroBatch& mb, int site) {
  const float p = model.dropout;
  if (p == 0.0f || !mb.training) return;
  const float scale = 1.0f / (1.0f - p);
  const int64_t s = model.seq_len, b = model.micro_batch, h = model.hidden;
  for (int64_t pos = 0; pos < s; ++pos) {
    for (int64_t j = 0; j < b; ++j) {
      const uint64_t sample = static_cast<uint64_t>(mb.first_sample + j);
      const uint64_t first = (sample * s + pos) * h;
      float* row = x + (pos * b + j) * h;
      for (int64_t f = 0; f < h; ++f)
        row[f] *= rng::dropout_keep(model.seed, mb.step, site, first + f, p) ? scale : 0.0f;
    }
  }
}

}  // namespace ptdp::kref
