#include "checkpoint/hf_gpt2_layout.hpp"

#include <fmt/format.h>

#include <string>

namespace ptdp {
namespace {

// [rows, cols] row-major -> [cols, rows].
std::vector<float> transposed(const std::vector<float>& in, int64_t rows, int64_t cols) {
  std::vector<float> out(in.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(c * rows + r)] = in[static_cast<size_t>(r * cols + c)];
  return out;
}

}  // namespace

std::vector<HfTensor> hf_gpt2_tensors(
    const RunConfig::Model& m,
    const std::function<std::vector<float>(const std::string&, const std::vector<int64_t>&)>& read) {
  const int64_t h = m.hidden, f = m.ffn_hidden, s = m.seq_len, vocab = m.vocab;
  const int64_t padded = m.padded_vocab > 0 ? m.padded_vocab : m.vocab;
  std::vector<HfTensor> out;
  std::vector<float> word = read("embedding.word", {padded, h});
  word.resize(static_cast<size_t>(vocab * h));  // the padding rows are never a real token
  out.push_back({"transformer.wte.weight", {vocab, h}, std::move(word)});
  out.push_back({"transformer.wpe.weight", {s, h}, read("embedding.position", {s, h})});
  for (int i = 0; i < m.layers; ++i) {
    const std::string from = "layers." + std::to_string(i) + ".", to = "transformer.h." + std::to_string(i) + ".";
    for (const char* ln : {"1", "2"})
      for (const char* part : {"weight", "bias"})
        out.push_back({to + "ln_" + ln + "." + part, {h}, read(from + "ln" + ln + "." + part, {h})});
    // [3, h, h] is the [3h, h] Linear weight; Conv1D keeps [h, 3h].
    out.push_back({to + "attn.c_attn.weight", {h, 3 * h}, transposed(read(from + "attn.qkv.weight", {3, h, h}), 3 * h, h)});
    out.push_back({to + "attn.c_attn.bias", {3 * h}, read(from + "attn.qkv.bias", {3, h})});
    out.push_back({to + "attn.c_proj.weight", {h, h}, transposed(read(from + "attn.proj.weight", {h, h}), h, h)});
    out.push_back({to + "attn.c_proj.bias", {h}, read(from + "attn.proj.bias", {h})});
    out.push_back({to + "mlp.c_fc.weight", {h, f}, transposed(read(from + "mlp.fc1.weight", {f, h}), f, h)});
    out.push_back({to + "mlp.c_fc.bias", {f}, read(from + "mlp.fc1.bias", {f})});
    out.push_back({to + "mlp.c_proj.weight", {f, h}, transposed(read(from + "mlp.fc2.weight", {h, f}), h, f)});
    out.push_back({to + "mlp.c_proj.bias", {h}, read(from + "mlp.fc2.bias", {h})});
  }
  out.push_back({"transformer.ln_f.weight", {h}, read("head.ln.weight", {h})});
  out.push_back({"transformer.ln_f.bias", {h}, read("head.ln.bias", {h})});
  return out;
}

nlohmann::json hf_gpt2_config(const RunConfig::Model& m) {
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"vocab_size", m.vocab},
          {"n_positions", m.seq_len},
          {"n_ctx", m.seq_len},
          {"n_embd", m.hidden},
          {"n_layer", m.layers},
          {"n_head", m.heads},
          {"n_inner", m.ffn_hidden},
          {"activation_function", "gelu_new"},  // the tanh approximation ptdp's kernels compute
          // The float as written in the manifest (1e-05), not its widened binary value.
          {"layer_norm_epsilon", std::stod(fmt::format("{}", m.layernorm_eps))},
          {"resid_pdrop", m.dropout},
          {"embd_pdrop", m.dropout},
          {"attn_pdrop", m.dropout},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"}};
}

}  // namespace ptdp
