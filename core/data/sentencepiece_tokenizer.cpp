// SentencePiece through its own C++ library: the models it writes are the ones Llama, T5 and
// Megatron's SentencePiece tokenizers load.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "data/output_guard.hpp"
#include "data/tokenizer.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) {
    const auto status = processor_.Load(path);
    if (!status.ok()) throw Error(path + ": not a SentencePiece model: " + status.ToString());
    record_.kind = "sentencepiece";
    record_.name = std::filesystem::path(path).filename().string();
    record_.sha256 = file_sha256(path);
    record_.vocab = processor_.GetPieceSize();
    if (processor_.eos_id() >= 0) record_.eod = processor_.eos_id();
  }
  const TokenizerRecord& record() const override { return record_; }
  void encode(std::string_view text, std::vector<int32_t>& out) const override {
    std::vector<int> ids;
    const auto status = processor_.Encode(absl::string_view(text.data(), text.size()), &ids);
    if (!status.ok()) throw Error(record_.name + ": cannot encode: " + status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  }
  std::string decode(std::span<const int32_t> tokens) const override {
    std::string text;
    const auto status = processor_.Decode(std::vector<int>(tokens.begin(), tokens.end()), &text);
    if (!status.ok()) throw Error(record_.name + ": cannot decode: " + status.ToString());
    return text;
  }
  bool needs_utf8() const override { return true; }

 private:
  sentencepiece::SentencePieceProcessor processor_;
  TokenizerRecord record_;
};

}  // namespace

std::unique_ptr<Tokenizer> open_sentencepiece(const std::string& path) {
  return std::make_unique<SentencePieceTokenizer>(path);
}

void train_sentencepiece(const std::vector<TextInput>& corpus, const std::string& json_key, int vocab,
                         const std::string& model_type, const std::string& out) {
  if (model_type != "bpe" && model_type != "unigram")
    throw Error("--type: unknown model type '" + model_type + "' (expected bpe or unigram)");
  if (vocab < 260) throw Error(fmt::format("--vocab {}: a vocabulary needs room for 4 special pieces and 256 bytes", vocab));
  refuse_folder_as_file(out);
  std::vector<std::string> inputs;
  for (const TextInput& input : corpus) inputs.push_back(input.path);
  refuse_output_that_is_an_input(out, inputs);
  // SentencePiece reads text files itself; the documents of JSONL files are written out for it
  // first, one line per line of their text. Every input is checked to be UTF-8 on the way.
  const TemporaryFile extracted_file(out + ".corpus.tmp");
  const std::string& extracted = extracted_file.path();
  std::vector<std::string> files;
  {
    std::ofstream lines;
    for (const TextInput& input : corpus) {
      if (input.jsonl && !lines.is_open()) {
        lines.open(extracted, std::ios::binary);
        if (!lines) throw Error(out + ": cannot create " + extracted);
        files.push_back(extracted);
      }
      if (!input.jsonl) files.push_back(input.path);
      read_documents(input, json_key, true, [&](const TextPiece& piece) {
        if (input.jsonl) lines << piece.text << '\n';
      });
    }
    if (lines.is_open() && !lines.flush()) throw Error(out + ": cannot write " + extracted);
  }
  // SentencePiece writes "<prefix>.model" and "<prefix>.vocab"; the model is renamed into place.
  const std::string prefix = out + ".tmp";
  std::unordered_map<std::string, std::string> args = {
      {"input", fmt::format("{}", fmt::join(files, ","))},
      {"model_prefix", prefix},
      {"vocab_size", std::to_string(vocab)},
      {"model_type", model_type},
      // Lossless, as Llama's tokenizer: decode(encode(text)) == text, spaces and all.
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"allow_whitespace_only_pieces", "true"},
      {"split_digits", "true"},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"pad_id", "3"},
      {"num_threads", std::to_string(std::max(1u, std::thread::hardware_concurrency()))},
      // Sentences are lines; a line longer than this is skipped by SentencePiece, not cut.
      {"max_sentence_length", "1000000"},
      // A large corpus is sampled, as SentencePiece recommends: ten million lines are plenty.
      {"input_sentence_size", "10000000"},
      {"shuffle_input_sentence", "true"}};
  sentencepiece::SetRandomGeneratorSeed(1);  // the same corpus gives the same vocabulary
  TemporaryFile model(prefix + ".model"), vocabulary(prefix + ".vocab");
  const auto status = sentencepiece::SentencePieceTrainer::Train(args);
  if (!status.ok()) throw Error(out + ": SentencePiece could not train: " + status.ToString());
  std::error_code ec;
  std::filesystem::rename(model.path(), out, ec);
  if (ec) throw Error(out + ": cannot rename " + model.path() + " into place: " + ec.message());
  model.keep();
}

}  // namespace ptdp
