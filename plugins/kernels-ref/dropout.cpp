#include "dropout.hpp"

#include <ptdp/counter_rng.hpp>

namespace ptdp::kref {

void apply_dropout(float* x, const ModelSpec& model, const MicroBatch& mb, int site, int64_t first_position,
                   int64_t positions) {
  const float p = model.dropout;
  if (p == 0.0f || !mb.training) return;
  const float scale = 1.0f / (1.0f - p);
  const int64_t s = model.seq_len, b = model.micro_batch, h = model.hidden;
  const int64_t rows = positions < 0 ? s : positions;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pos = first_position + r;
    for (int64_t j = 0; j < b; ++j) {
      const uint64_t sample = static_cast<uint64_t>(mb.first_sample + j);
      const uint64_t first = (sample * s + pos) * h;
      float* row = x + (r * b + j) * h;
      for (int64_t f = 0; f < h; ++f)
        row[f] *= rng::dropout_keep(model.seed, mb.step, site, first + f, p) ? scale : 0.0f;
    }
  }
}

}  // namespace ptdp::kref
