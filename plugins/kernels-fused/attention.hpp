#pragma once
// Causal self-attention of one tensor-parallel rank's heads, in two interchangeable paths: the
// paper's (strided-batched GEMMs and the fused scale + mask + softmax, attention_unfused.cpp) and
// flash attention through cuDNN's fused SDPA (flash_attention.cpp).
//
// Layouts follow the [s, b, h] activations: qkv is [s, b, 3, heads, head_dim] (the QKV GEMM's
// output as is: q, k, v blocks of each token, each by head) and the context is
// [s, b, heads, head_dim], ready for the output projection.
#include <memory>
#include <string>

#include "kernel_context.hpp"

namespace ptdp::fused {
inline namespace PTDP_FUSED_ACTIVATIONS {

struct AttentionShape {
  int seq = 0;
  int batch = 0;
  int heads = 0;  // this rank's heads
  int head_dim = 0;
  int64_t tokens() const { return int64_t(seq) * batch; }
  int64_t width() const { return int64_t(heads) * head_dim; }
};

class Attention {
 public:
  virtual ~Attention() = default;
  virtual std::string name() const = 0;
  // Writes ctx. Returns what backward needs besides qkv and ctx (null when `save` is false).
  virtual std::shared_ptr<void> forward(const act_t* qkv, act_t* ctx, bool save) = 0;
  // dqkv: [s, b, 3, heads, head_dim], written.
  virtual void backward(const act_t* qkv, const act_t* ctx, const act_t* dctx, const void* saved, act_t* dqkv) = 0;
};

}  // inline namespace PTDP_FUSED_ACTIVATIONS
}  // namespace ptdp::fused
