#include "checkpoint/hf_gpt2_layout.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace ptdp {
namespace {

// [rows, cols] row-major -> [cols, rows].
std::vector<float> transpose(const std::vector<float>& in, int64_t rows, int64_t cols) {
  std::vector<float> out(in.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(c * rows + r)] = in[static_cast<size_t>(r * cols + c)];
  return out;
}

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

int64_t HfGpt2Tensor::ptdp_elements() const { return count_of(ptdp_shape); }
int64_t HfGpt2Tensor::hf_elements() const { return count_of(hf_shape); }

std::vector<float> HfGpt2Tensor::to_hf(const std::vector<float>& ptdp_values) const {
  std::vector<float> out = transposed ? transpose(ptdp_values, rows, cols) : ptdp_values;
  out.resize(static_cast<size_t>(count_of(hf_shape)));  // drops the vocabulary's padding rows
  return out;
}

std::vector<float> HfGpt2Tensor::to_ptdp(const std::vector<float>& hf_values) const {
  if (transposed) return transpose(hf_values, cols, rows);
  std::vector<float> out = hf_values;
  out.resize(static_cast<size_t>(count_of(ptdp_shape)), 0.0f);  // padding rows: zero, never a token
  return out;
}

std::vector<HfGpt2Tensor> hf_gpt2_tensors(const RunConfig::Model& m) {
  const int64_t h = m.hidden, f = m.ffn_hidden, s = m.seq_len, vocab = m.vocab;
  const int64_t padded = m.padded_vocab > 0 ? m.padded_vocab : m.vocab;
  std::vector<HfGpt2Tensor> out;
  auto same = [&](std::string from, std::vector<int64_t> shape, std::string to, std::vector<int64_t> hf_shape) {
    out.push_back({std::move(from), std::move(shape), std::move(to), std::move(hf_shape), false, 0, 0});
  };
  // ptdp's [rows, cols] weight is Conv1D's [cols, rows].
  auto flipped = [&](std::string from, std::vector<int64_t> shape, std::string to, int64_t rows, int64_t cols) {
    out.push_back({std::move(from), std::move(shape), std::move(to), {cols, rows}, true, rows, cols});
  };
  same("embedding.word", {padded, h}, "transformer.wte.weight", {vocab, h});
  same("embedding.position", {s, h}, "transformer.wpe.weight", {s, h});
  for (int i = 0; i < m.layers; ++i) {
    const std::string from = "layers." + std::to_string(i) + ".", to = "transformer.h." + std::to_string(i) + ".";
    for (const char* ln : {"1", "2"})
      for (const char* part : {"weight", "bias"})
        same(from + "ln" + ln + "." + part, {h}, to + "ln_" + ln + "." + part, {h});
    flipped(from + "attn.qkv.weight", {3, h, h}, to + "attn.c_attn.weight", 3 * h, h);
    same(from + "attn.qkv.bias", {3, h}, to + "attn.c_attn.bias", {3 * h});
    flipped(from + "attn.proj.weight", {h, h}, to + "attn.c_proj.weight", h, h);
    same(from + "attn.proj.bias", {h}, to + "attn.c_proj.bias", {h});
    flipped(from + "mlp.fc1.weight", {f, h}, to + "mlp.c_fc.weight", f, h);
    same(from + "mlp.fc1.bias", {f}, to + "mlp.c_fc.bias", {f});
    flipped(from + "mlp.fc2.weight", {h, f}, to + "mlp.c_proj.weight", h, f);
    same(from + "mlp.fc2.bias", {h}, to + "mlp.c_proj.bias", {h});
  }
  same("head.ln.weight", {h}, "transformer.ln_f.weight", {h});
  same("head.ln.bias", {h}, "transformer.ln_f.bias", {h});
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

std::string hf_gpt2_config_mismatch(const nlohmann::json& config, const RunConfig::Model& m) {
  const std::pair<const char*, std::pair<const char*, int64_t>> sizes[] = {
      {"vocab_size", {"model.vocab", m.vocab}},      {"n_positions", {"model.seq_len", m.seq_len}},
      {"n_embd", {"model.hidden", m.hidden}},        {"n_layer", {"model.layers", m.layers}},
      {"n_head", {"model.heads", m.heads}},          {"n_inner", {"model.ffn_hidden", m.ffn_hidden}}};
  for (const auto& [key, want] : sizes) {
    if (!config.contains(key) || !config[key].is_number_integer()) {
      // GPT-2's config leaves n_inner null for 4 * n_embd.
      if (std::string(key) == "n_inner" && m.ffn_hidden == 4 * m.hidden) continue;
      return fmt::format("{} is missing or not an integer", key);
    }
    if (config[key].get<int64_t>() != want.second)
      return fmt::format("{} is {}, {} is {}", key, config[key].get<int64_t>(), want.first, want.second);
  }
  const std::string activation = config.value("activation_function", "gelu_new");
  if (activation != "gelu_new")
    return fmt::format("activation_function is {}, ptdp computes gelu_new (the tanh GeLU)", activation);
  const double eps = config.value("layer_norm_epsilon", 1e-5);
  if (std::abs(eps - m.layernorm_eps) > 1e-6 * eps)
    return fmt::format("layer_norm_epsilon is {}, model.layernorm_eps is {}", eps, m.layernorm_eps);
  return "";
}

}  // namespace ptdp
