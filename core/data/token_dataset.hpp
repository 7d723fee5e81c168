#pragma once
// TokenDataset: a token file opened for training, in any of the formats ptdp reads:
//   ptdp  - ptdp's own binary format (u8, u16 or i32 tokens),
//   llmc  - llm.c's GPT-2 shards (uint16 tokens), so data tokenized for llm.c trains as is,
//   text  - any other file: its raw bytes are the tokens (0..255), so a plain .txt trains directly.
// The file is memory-mapped and shared by copies of the dataset.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "data/mapped_file.hpp"
#include "data/token_file_format.hpp"
#include "data/tokenizer_record.hpp"

namespace ptdp {

enum class TokenFileFormat { Ptdp, Llmc, Text };

const char* token_file_format_name(TokenFileFormat format);

class TokenDataset {
 public:
  // format: "auto" (by the file's magic: ptdp, llm.c, else text) | "ptdp" | "llmc" | "text".
  // Throws ptdp::Error "<path>: <reason>" for a file that is missing, malformed or empty.
  static TokenDataset open(const std::string& path, const std::string& format = "auto");

  const std::string& path() const { return file_->path(); }
  TokenFileFormat format() const { return format_; }
  TokenDType dtype() const { return dtype_; }
  int64_t size() const { return count_; }

  int32_t token(int64_t i) const;
  // Tokens [first, first + count) widened to int32; the range must lie inside the file.
  void read(int64_t first, int64_t count, int32_t* out) const;

  // Documents in the file: a version 2 ptdp file's index; an llm.c shard's end-of-text tokens
  // (llm.c begins every document with one); nullopt where the file does not say.
  std::optional<int64_t> documents() const { return documents_; }
  // The tokenizer that made the tokens, as a version 2 ptdp file records it; nullopt for other
  // files (text is its own bytes).
  const std::optional<TokenizerRecord>& tokenizer() const { return tokenizer_; }

  int32_t max_token() const { return max_token_; }
  // Throws ptdp::Error naming the file, the first largest token and its index when a token does
  // not fit a vocabulary of `vocab` ids, or naming the tokenizer when its vocabulary does not.
  void check_vocab(int vocab) const;

 private:
  TokenDataset(std::shared_ptr<const MappedFile> file, TokenFileFormat format, TokenDType dtype,
               size_t offset, int64_t count);
  void scan_tokens();

  std::shared_ptr<const MappedFile> file_;
  TokenFileFormat format_;
  TokenDType dtype_;
  const uint8_t* tokens_;
  int64_t count_;
  int32_t max_token_ = 0;
  int64_t max_token_index_ = 0;
  std::optional<int64_t> documents_;
  std::optional<TokenizerRecord> tokenizer_;
};

}  // namespace ptdp
