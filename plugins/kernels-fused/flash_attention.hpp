#pragma once
// Flash attention through cuDNN's fused scaled-dot-product attention (cudnn-frontend graph API),
// forward and backward, reading q, k, v in place from the [s, b, 3, heads, head_dim] QKV output
// and keeping only the per-row softmax statistics for backward. Built only when the
// cudnn-frontend headers were found at configure time.
#include <memory>

#include "attention.hpp"
#include "ptdp/plugin_log.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

bool flash_attention_built();
// Throws ptdp::Error saying how to get the flash path when this build has none.
void require_flash_attention_built();

// Builds (and checks that cuDNN supports) the forward and backward graphs for this shape; throws
// ptdp::Error saying why when it cannot. `log` hears of a cuDNN handle that cannot be destroyed.
std::unique_ptr<Attention> make_flash_attention(const AttentionShape& shape, const KernelContext& ctx,
                                                PluginLog log = {});

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
