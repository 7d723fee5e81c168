#pragma once
// Dropout with counter-based masks (ptdp/counter_rng.hpp): the keep decision of an element is a
// function of (seed, step, site, global sample, position, feature) only, so replicated regions
// draw the same mask on every tensor-parallel rank and every layout draws the same masks.
#include <ptdp/layer_kernels.hpp>

namespace ptdp::kref {

constexpr int embedding_dropout_site() { return 0; }
constexpr int attention_dropout_site(int layer) { return 1 + 2 * layer; }
constexpr int mlp_dropout_site(int layer) { return 2 + 2 * layer; }

// x: positions [first_position, first_position + positions) of an [s, b, h] activation of
// microbatch `mb` (all of it by default; a sequence-parallel rank's rows otherwise). Each element
// is multiplied by 1/(1-p) where kept and by 0 where dropped. The backward applies the same
// function to the gradient.
void apply_dropout(float* x, const ModelSpec& model, const MicroBatch& mb, int site, int64_t first_position = 0,
                   int64_t positions = -1);

}  // namespace ptdp::kref
