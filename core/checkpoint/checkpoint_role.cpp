#include "checkpoint/checkpoint_role.hpp"

namespace ptdp {

bool writes(const CheckpointRole& role, const ParamRef& param) {
  if (role.dp_rank != 0) return false;
  if (param.shard_dim < 0 && role.tp_rank != 0) return false;
  const bool last_stage = role.pp_stage == role.pipeline_stages - 1;
  if (role.pipeline_stages > 1 && last_stage && param.name == kTiedWordEmbedding) return false;
  return true;
}

}  // namespace ptdp
