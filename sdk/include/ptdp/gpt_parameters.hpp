#pragma once
// The parameters of the GPT every LayerKernels plugin builds: names, global shapes, how tensor
// parallelism splits them and which are weight-decayed. The core's checkpoints, resharding and
// Hugging Face export read parameters by these names and shapes, and backends are compared
// parameter by parameter, so the table is written once, here.
//
// Tensor parallelism (the paper's §2.3): QKV and FC1 split their outputs (column parallel), the
// attention projection and FC2 split their inputs (row parallel); their biases follow the output
// split or stay whole. QKV is [3, h, h], q, k and v apart, so that a split along dimension 1
// gives each rank whole heads of all three. The word embedding splits its (padded) vocabulary.
#include <cstdint>
#include <string>
#include <vector>

#include "ptdp/error.hpp"

namespace ptdp {

struct GptParameterShape {
  std::string name;              // "layers.3.attn.qkv.weight", "embedding.word", ...
  std::vector<int64_t> global;   // the whole tensor
  int shard_dim = -1;            // the dimension tensor parallelism splits; -1: every rank holds all
  int64_t shard_offset = 0;      // where this rank's part starts along shard_dim
  std::vector<int64_t> local;    // this rank's part
  bool decay = false;            // weight decay applies (matrices and embeddings, not biases or norms)
};

namespace gpt_detail {

inline GptParameterShape whole(std::string name, std::vector<int64_t> shape, bool decay) {
  return GptParameterShape{std::move(name), shape, -1, 0, shape, decay};
}

// An even split of `global` along `dim` over `size` ranks; this is rank `rank`'s part.
inline GptParameterShape split(std::string name, std::vector<int64_t> global, int dim, int size, int rank,
                               bool decay) {
  if (size < 1 || rank < 0 || rank >= size || global.at(static_cast<size_t>(dim)) % size != 0)
    throw Error("gpt_parameters: " + name + " does not split evenly over " + std::to_string(size) +
                                " tensor-parallel ranks");
  std::vector<int64_t> local = global;
  local[static_cast<size_t>(dim)] /= size;
  return GptParameterShape{std::move(name), std::move(global), dim, rank * local[static_cast<size_t>(dim)], local,
                           decay};
}

}  // namespace gpt_detail

// Layer `layer`'s twelve parameters, in the order backends list them.
inline std::vector<GptParameterShape> gpt_block_parameters(int layer, int64_t hidden, int64_t ffn_hidden, int tp_size,
                                                           int tp_rank) {
  using gpt_detail::split;
  using gpt_detail::whole;
  const std::string p = "layers." + std::to_string(layer) + ".";
  const int64_t h = hidden, f = ffn_hidden;
  return {whole(p + "ln1.weight", {h}, false),
          whole(p + "ln1.bias", {h}, false),
          split(p + "attn.qkv.weight", {3, h, h}, 1, tp_size, tp_rank, true),
          split(p + "attn.qkv.bias", {3, h}, 1, tp_size, tp_rank, false),
          split(p + "attn.proj.weight", {h, h}, 1, tp_size, tp_rank, true),
          whole(p + "attn.proj.bias", {h}, false),
          whole(p + "ln2.weight", {h}, false),
          whole(p + "ln2.bias", {h}, false),
          split(p + "mlp.fc1.weight", {f, h}, 0, tp_size, tp_rank, true),
          split(p + "mlp.fc1.bias", {f}, 0, tp_size, tp_rank, false),
          split(p + "mlp.fc2.weight", {h, f}, 1, tp_size, tp_rank, true),
          whole(p + "mlp.fc2.bias", {h}, false)};
}

// The word embedding (shared with the head when the embeddings are tied), split by vocabulary.
inline GptParameterShape gpt_word_embedding(int64_t padded_vocab, int64_t hidden, int tp_size, int tp_rank) {
  return gpt_detail::split("embedding.word", {padded_vocab, hidden}, 0, tp_size, tp_rank, true);
}

inline GptParameterShape gpt_position_embedding(int64_t seq_len, int64_t hidden) {
  return gpt_detail::whole("embedding.position", {seq_len, hidden}, true);
}

// The final LayerNorm before the head: weight, then bias.
inline std::vector<GptParameterShape> gpt_head_norm(int64_t hidden) {
  return {gpt_detail::whole("head.ln.weight", {hidden}, false), gpt_detail::whole("head.ln.bias", {hidden}, false)};
}

}  // namespace ptdp
