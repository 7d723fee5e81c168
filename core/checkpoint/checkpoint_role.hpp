#pragma once
// Which rank writes which parameter, so that every element of the model is saved exactly once:
// only data-parallel rank 0 writes (the other replicas hold the same values); a tensor every
// TP rank holds whole is written by TP rank 0 alone; and the last pipeline stage's copy of the
// tied word embedding (p > 1) is left out, the first stage writes the original.
#include <ptdp/layer_kernels.hpp>

namespace ptdp {

struct CheckpointRole {
  int rank = 0;
  int world_size = 1;
  int dp_rank = 0;
  int tp_rank = 0;
  int pp_stage = 0;
  int pipeline_stages = 1;
};

// Name of the word embedding, which the head on the last stage copies when p > 1.
inline constexpr const char* kTiedWordEmbedding = "embedding.word";

bool writes(const CheckpointRole& role, const ParamRef& param);

}  // namespace ptdp
