#pragma once
// The tokenizer a saved step holds, ready to encode and decode with here: the file the step
// carries is written to a folder of its own under the system's temporary folder, which lives as
// long as this object.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "data/run_tokenizer.hpp"
#include "data/tokenizer.hpp"

namespace ptdp::host {

class StepTokenizer {
 public:
  // `metadata`: the step's; `source` names the step in messages.
  StepTokenizer(const nlohmann::json& metadata, const std::string& source);
  ~StepTokenizer();
  StepTokenizer(const StepTokenizer&) = delete;
  StepTokenizer& operator=(const StepTokenizer&) = delete;

  // What the step records; nullopt for byte-level runs and steps saved before tokenizers were.
  const std::optional<RunTokenizer>& recorded() const { return recorded_; }
  // The tokenizer, when the step holds a SentencePiece model; null otherwise (byte-level, a
  // record without its file, or a Hugging Face tokenizer.json, which only Python reads).
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // The scratch folder, for other files of the same lifetime.
  const std::string& folder() const { return folder_; }

 private:
  std::optional<RunTokenizer> recorded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::string folder_;
};

}  // namespace ptdp::host
