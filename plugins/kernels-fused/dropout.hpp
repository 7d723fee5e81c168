#pragma once
// One dropout site of one microbatch: which mask counter_rng.hpp draws, and how a row of an
// [s, b, h] activation maps to the layout-independent element index the mask is keyed by.
#include <cstdint>

#include "ptdp/counter_rng.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct DropoutSite {
  uint64_t seed = 0;
  int64_t step = 0;
  int site = 0;
  float p = 0.0f;              // 0: no dropout, nothing is drawn
  int64_t first_sample = 0;    // global index of the microbatch's first sequence
  int64_t first_row = 0;       // of the rows a kernel is given: its rank's first under sequence parallelism
  int micro_batch = 1;         // b: rows are ordered (position, sample)
  int seq_len = 1;
  int hidden = 1;

  PTDP_HD bool active() const { return p > 0.0f; }
  PTDP_HD float keep_scale() const { return 1.0f / (1.0f - p); }

  // Multiplier of element (row, feature): 1/(1-p) when kept, 0 when dropped.
  PTDP_HD float factor(int64_t row, int64_t feature) const {
    const int64_t position = (first_row + row) / micro_batch;
    const int64_t sample = first_sample + (first_row + row) % micro_batch;
    const uint64_t element = (static_cast<uint64_t>(sample) * static_cast<uint64_t>(seq_len) +
                              static_cast<uint64_t>(position)) * static_cast<uint64_t>(hidden) +
                             static_cast<uint64_t>(feature);
    return rng::dropout_keep(seed, step, site, element, p) ? keep_scale() : 0.0f;
  }
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
