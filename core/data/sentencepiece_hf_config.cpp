#include "data/sentencepiece_hf_config.hpp"

#include <sentencepiece_processor.h>

#include "ptdp/error.hpp"

namespace ptdp {

nlohmann::json sentencepiece_hf_tokenizer_config(const std::string& model, int64_t max_length) {
  sentencepiece::SentencePieceProcessor processor;
  const auto status = processor.LoadFromSerializedProto(absl::string_view(model.data(), model.size()));
  if (!status.ok()) throw Error("the step's tokenizer is not a SentencePiece model: " + status.ToString());
  nlohmann::json config = {{"tokenizer_class", "LlamaTokenizer"},
                           {"add_bos_token", false},
                           {"add_eos_token", false},
                           {"legacy", true},
                           {"clean_up_tokenization_spaces", false},
                           {"model_max_length", max_length}};
  // A piece the model does not define (id -1) is left out: the loader then has none.
  const std::pair<const char*, int> specials[] = {{"unk_token", processor.unk_id()},
                                                  {"bos_token", processor.bos_id()},
                                                  {"eos_token", processor.eos_id()},
                                                  {"pad_token", processor.pad_id()}};
  for (const auto& [key, id] : specials)
    if (id >= 0) config[key] = processor.IdToPiece(id);
  return config;
}

}  // namespace ptdp
