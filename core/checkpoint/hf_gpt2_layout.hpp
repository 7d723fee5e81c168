#pragma once
// ptdp's GPT-2 parameters in the layout of Hugging Face's GPT2LMHeadModel: the tensor names of
// `transformers`, and its Conv1D weights stored [in, out], the transpose of ptdp's [out, in].
//   embedding.word [padded V, h]        -> transformer.wte.weight [V, h] (padding rows dropped)
//   embedding.position [s, h]           -> transformer.wpe.weight
//   layers.i.ln1 / ln2 .weight|bias     -> transformer.h.i.ln_1 / ln_2
//   layers.i.attn.qkv.weight [3, h, h]  -> transformer.h.i.attn.c_attn.weight [h, 3h]
//   layers.i.attn.qkv.bias [3, h]       -> transformer.h.i.attn.c_attn.bias [3h]
//   layers.i.attn.proj.weight [h, h]    -> transformer.h.i.attn.c_proj.weight (transposed)
//   layers.i.mlp.fc1.weight [f, h]      -> transformer.h.i.mlp.c_fc.weight [h, f]
//   layers.i.mlp.fc2.weight [h, f]      -> transformer.h.i.mlp.c_proj.weight [f, h]
//   head.ln.weight|bias                 -> transformer.ln_f
// The output projection is tied to wte, as in GPT-2, so lm_head is not stored.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

struct HfTensor {
  std::string name;            // the Hugging Face name
  std::vector<int64_t> shape;  // its shape there
  std::vector<float> values;
};

// Every GPT2LMHeadModel tensor of `model`, from `read(ptdp_name, global_shape)`, which returns a
// ptdp parameter's fp32 master weights, row-major.
std::vector<HfTensor> hf_gpt2_tensors(
    const RunConfig::Model& model,
    const std::function<std::vector<float>(const std::string&, const std::vector<int64_t>&)>& read);

// config.json of a GPT2LMHeadModel with every dimension of `model`.
nlohmann::json hf_gpt2_config(const RunConfig::Model& model);

}  // namespace ptdp
