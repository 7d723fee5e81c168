#pragma once
// The tokenizer_config.json beside an exported SentencePiece model, so that Hugging Face's
// AutoTokenizer.from_pretrained(folder) loads it: without one it finds no tokenizer class for a
// bare tokenizer.model.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace ptdp {

// `model` is the SentencePiece model file's bytes. LlamaTokenizer is the class: it reads a
// SentencePiece model as it is (a fast tokenizer is converted from it), and ptdp's models are
// trained as Llama's are (identity normalization, byte fallback, a space in front of the text).
// No BOS or EOS is added, since ptdp's encoding adds none; the special tokens are the model's own
// pieces. Throws ptdp::Error when `model` is not a SentencePiece model.
nlohmann::json sentencepiece_hf_tokenizer_config(const std::string& model, int64_t max_length);

}  // namespace ptdp
