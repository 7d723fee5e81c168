#pragma once
// What every kernel launcher needs: the stream it enqueues on, the arena its scratch comes from,
// and the multiprocessor count that sizes its grid.
#include <cuda_runtime.h>

#include "activation_type.hpp"
#include "arena.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct KernelContext {
  cudaStream_t stream = nullptr;
  DeviceArena* arena = nullptr;
  int sm_count = 132;
  // The plugin option fused_layer_norm_backward: LayerNorm's backward in one launch (layer_norm.hpp).
  bool fused_layer_norm_backward = true;
};

// Vector width of a kernel over rows of `cols` elements: 8 (16-byte accesses of act_t) when every
// row starts 16-byte aligned, else 1.
inline int row_vector_width(long long cols) { return cols % 8 == 0 ? 8 : 1; }

inline unsigned int blocks_for(long long work, int per_block) {
  long long blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned int>(blocks < 1 ? 1 : blocks);
}

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
