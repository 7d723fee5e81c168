#pragma once
// ptdp's GPT-2 parameters in the layout of Hugging Face's GPT2LMHeadModel: the tensor names of
// `transformers`, and its Conv1D weights stored [in, out], the transpose of ptdp's [out, in].
//   embedding.word [padded V, h]        <-> transformer.wte.weight [V, h] (padding rows dropped)
//   embedding.position [s, h]           <-> transformer.wpe.weight
//   layers.i.ln1 / ln2 .weight|bias     <-> transformer.h.i.ln_1 / ln_2
//   layers.i.attn.qkv.weight [3, h, h]  <-> transformer.h.i.attn.c_attn.weight [h, 3h]
//   layers.i.attn.qkv.bias [3, h]       <-> transformer.h.i.attn.c_attn.bias [3h]
//   layers.i.attn.proj.weight [h, h]    <-> transformer.h.i.attn.c_proj.weight (transposed)
//   layers.i.mlp.fc1.weight [f, h]      <-> transformer.h.i.mlp.c_fc.weight [h, f]
//   layers.i.mlp.fc2.weight [h, f]      <-> transformer.h.i.mlp.c_proj.weight [f, h]
//   head.ln.weight|bias                 <-> transformer.ln_f
// The output projection is tied to wte, as in GPT-2, so lm_head is not stored.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// One parameter in both layouts.
struct HfGpt2Tensor {
  std::string ptdp_name;
  std::vector<int64_t> ptdp_shape;  // global, with the padded vocabulary
  std::string hf_name;
  std::vector<int64_t> hf_shape;
  bool transposed = false;  // the values are the transpose of ptdp's, seen as [rows, cols] below
  int64_t rows = 0, cols = 0;

  // ptdp's values (row-major, ptdp_shape) in Hugging Face's order and extent, and back. The
  // vocabulary's padding rows are dropped one way and come back as zeros the other.
  std::vector<float> to_hf(const std::vector<float>& ptdp_values) const;
  std::vector<float> to_ptdp(const std::vector<float>& hf_values) const;
  int64_t ptdp_elements() const;
  int64_t hf_elements() const;
};

// Every GPT2LMHeadModel tensor of `model`.
std::vector<HfGpt2Tensor> hf_gpt2_tensors(const RunConfig::Model& model);

// config.json of a GPT2LMHeadModel with every dimension of `model`.
nlohmann::json hf_gpt2_config(const RunConfig::Model& model);

// Why a config.json does not describe `model` ("n_embd is 768, model.hidden is 512"), or "".
std::string hf_gpt2_config_mismatch(const nlohmann::json& config, const RunConfig::Model& model);

}  // namespace ptdp
