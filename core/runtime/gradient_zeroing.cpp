#include "runtime/gradient_zeroing.hpp"

namespace ptdp {

bool blocks_write_first_gradients(uint32_t kernels_abi_minor) { return kernels_abi_minor >= 6; }

std::vector<Tensor> gradients_to_zero(const ChunkBuffers& buffers, const ChunkLayout& layout, bool blocks_write) {
  if (!blocks_write) return {buffers.grad()};
  // Units number the chunk's layers in forward order: the embedding first, the head last.
  const int head_unit = (layout.has_embedding ? 1 : 0) + layout.num_layers;
  std::vector<Tensor> zeroed;
  for (size_t k = 0; k < buffers.params().size(); ++k) {
    const int unit = buffers.entries()[k].unit;
    if ((layout.has_embedding && unit == 0) || (layout.has_head && unit == head_unit))
      zeroed.push_back(buffers.params()[k].grad);
  }
  return zeroed;
}

}  // namespace ptdp
