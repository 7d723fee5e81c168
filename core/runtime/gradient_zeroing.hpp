#pragma once
// Which gradients the core zeroes before a step's backward. Kernels built for ABI 1.6 or later
// write their transformer blocks' gradients on each chunk's first backward of the step
// (MicroBatch::first_gradient), so for them only the embedding's and the head's are zeroed: on
// the GPU that saves a pass over every weight gradient (5.3 GB a step for the 1.3B model) and
// the weight-gradient GEMMs' reading of what it wrote. Older kernels add to every gradient.
#include <cstdint>
#include <vector>

#include <ptdp/tensor.hpp>

#include "runtime/chunk_buffers.hpp"
#include "runtime/model_partition.hpp"

namespace ptdp {

bool blocks_write_first_gradients(uint32_t kernels_abi_minor);

// One chunk's tensors to zero each step: its whole gradient buffer, or, when its blocks write
// their own, the gradients of its embedding's and head's parameters.
std::vector<Tensor> gradients_to_zero(const ChunkBuffers& buffers, const ChunkLayout& layout, bool blocks_write);

}  // namespace ptdp
