#pragma once
// RunTokenizer: the tokenizer a run trains with, as each checkpoint step records it, so that the
// model's token ids keep their meaning after training: `eval` encodes text with it and refuses
// tokens of another tokenizer, a resumed run refuses data of another tokenizer, and `export hf`
// writes it beside the weights. It is the record the run's data files share; with data.tokenizer
// set, the tokenizer file itself travels in the step, whole.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "data/run_data.hpp"
#include "data/tokenizer_record.hpp"

namespace ptdp {

struct RunTokenizer {
  TokenizerRecord record;
  std::string file;  // the tokenizer file's bytes; empty when data.tokenizer is not set

  nlohmann::json json() const;
  // Throws ptdp::Error "<where>: <reason>" for a malformed entry.
  static RunTokenizer from_json(const nlohmann::json& json, const std::string& where);
  // The tokenizer file written to `path` (which must not be set empty).
  void write_file(const std::string& path) const;
};

// The run's tokenizer: data.tokenizer's, else the one the data files record, else none (byte-level
// text, llm.c shards and version 1 files record none). Throws ptdp::Error with one line when
// data.tokenizer is not the tokenizer a data file records, or its vocabulary exceeds model.vocab.
std::optional<RunTokenizer> run_tokenizer(const RunConfig& config, const RunData& data);

// Throws ptdp::Error "<where>: ..." when a saved step (its metadata) records a tokenizer other
// than the run's: its embedding rows mean the pieces of that tokenizer, not of this one.
void check_resumed_tokenizer(const nlohmann::json& step_metadata, const std::optional<RunTokenizer>& run,
                             const std::string& where);

// The record of a tokenizer file: a SentencePiece model, or a Hugging Face tokenizer.json (its
// vocabulary and end-of-document token read from the JSON).
TokenizerRecord tokenizer_file_record(const std::string& path);

}  // namespace ptdp
