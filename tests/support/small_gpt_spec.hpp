#pragma once
// The small GPT the kernels tests compare backends on: dropout on, a vocabulary that needs
// padding at every tensor-parallel size they use, and shapes every backend serves (head dim 16).
// Header-only, so that the device checks, which link no test library, share it too.
#include <ptdp/layer_kernels.hpp>

namespace ptdp::test {

inline ModelSpec small_gpt_spec() {
  ModelSpec m;
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.seq_len = 32;
  m.vocab = 97;
  m.padded_vocab = 100;
  m.ffn_hidden = 256;
  m.micro_batch = 2;
  m.dropout = 0.1f;
  m.layernorm_eps = 1e-5f;
  m.seed = 1234;
  return m;
}

}  // namespace ptdp::test
