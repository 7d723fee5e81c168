#pragma once
// Tokenizer: text to token ids and back. Byte-level (every byte a token, vocabulary 256) needs
// nothing; a SentencePiece model (BPE or unigram, trained by `ptdp-host data tokenizer train`)
// is read through the SentencePiece library. Hugging Face tokenizer.json files are encoded by
// scripts/encode_hf.py through the `tokenizers` library, which has no C++ API.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/text_documents.hpp"
#include "data/tokenizer_record.hpp"

namespace ptdp {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual const TokenizerRecord& record() const = 0;
  // Appends the tokens of `text` to `out`. Safe to call from several threads at once.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) const = 0;
  virtual std::string decode(std::span<const int32_t> tokens) const = 0;
  // False for byte-level, which takes any bytes; the others need valid UTF-8.
  virtual bool needs_utf8() const = 0;
};

std::unique_ptr<Tokenizer> byte_tokenizer();

// `path`: a SentencePiece model (any other name is refused, naming the ways to encode with it).
// Throws ptdp::Error "<path>: <reason>".
std::unique_ptr<Tokenizer> open_tokenizer(const std::string& path);

// Trains a SentencePiece vocabulary of `vocab` pieces ("bpe" or "unigram") on the documents of
// `corpus` (SentencePiece reads each line as a sentence) and writes the model to `out` (through
// "<out>.tmp"). Pieces 0..3 are <unk>, <s>, </s> (the end of a document) and <pad>; every byte
// has a piece of its own, so any text encodes without unknown tokens, and the text is not
// normalized, so decoding gives back exactly the text that was encoded. Throws ptdp::Error
// with one line for bad input (see read_documents); `out` is then untouched.
void train_sentencepiece(const std::vector<TextInput>& corpus, const std::string& json_key, int vocab,
                         const std::string& model_type, const std::string& out);

}  // namespace ptdp
