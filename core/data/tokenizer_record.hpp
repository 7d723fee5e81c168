#pragma once
// TokenizerRecord: what a token file (and a checkpoint) says about the tokenizer that made its
// tokens, so files of different tokenizers are never mixed in one run and a trained model's
// text can be decoded with the vocabulary it learned.
#include <cstdint>
#include <optional>
#include <string>

namespace ptdp {

struct TokenizerRecord {
  std::string kind;    // "bytes" | "sentencepiece" | "huggingface"
  std::string name;    // the tokenizer file's name (without its folder); empty for bytes
  std::string sha256;  // hex digest of the tokenizer file; empty for bytes
  int64_t vocab = 0;   // ids 0 .. vocab - 1
  std::optional<int32_t> eod;  // the end-of-document token appended after each document

  static TokenizerRecord bytes() { return {"bytes", "", "", 256, std::nullopt}; }

  std::string json() const;
  // Throws ptdp::Error "<where>: <reason>" for a record that is not one.
  static TokenizerRecord parse(const std::string& json, const std::string& where);

  // Same kind and same file: the ids mean the same pieces.
  bool same_tokenizer(const TokenizerRecord& other) const { return kind == other.kind && sha256 == other.sha256; }
  // "sentencepiece tok.model (vocab 2000, end of document 2, sha256 3f2a9c01…)".
  std::string describe() const;
};

// Hex SHA-256 of a file's bytes: a tokenizer's identity, whatever it is called.
std::string file_sha256(const std::string& path);

}  // namespace ptdp
