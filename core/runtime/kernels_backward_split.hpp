#pragma once
// Whether the kernels plugin splits a block's backward into its input and weight gradients
// (LayerKernels::splits_backward, ABI 1.9). A zero-bubble schedule runs with either: where the
// kernels do not split, the core runs each BackwardInput as the whole backward and each
// BackwardWeight as nothing, which gives the same losses without the schedule's smaller bubble.
#include <cstdint>

#include <ptdp/layer_kernels.hpp>

namespace ptdp {

// A plugin of an older minor is never asked (its vtable has no such entry): it does not split.
inline bool blocks_split_backward(uint32_t kernels_abi_minor, const LayerKernels& kernels) {
  return kernels_abi_minor >= 9 && kernels.splits_backward();
}

}  // namespace ptdp
