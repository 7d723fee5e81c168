#pragma once
// Writes token files: ptdp's version 1 (tokens only), version 2 (documents and their tokenizer),
// or an llm.c shard. A file appears under its name only when complete: it is written to
// "<path>.tmp" and renamed, so a failure never leaves a partial file or clobbers an existing one.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "data/token_file_format.hpp"
#include "data/tokenizer_record.hpp"

namespace ptdp {

enum class TokenFileLayout { Ptdp, PtdpIndexed, Llmc };

class TokenFileWriter {
 public:
  // Creates "<path>.tmp". Throws ptdp::Error "<path>: cannot create <path>.tmp: <reason>".
  // An llm.c shard stores uint16 tokens whatever `dtype` says.
  TokenFileWriter(std::string path, TokenFileLayout layout, TokenDType dtype, TokenizerRecord tokenizer);
  ~TokenFileWriter();  // removes "<path>.tmp" unless committed
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  const std::string& path() const { return path_; }
  int64_t tokens() const { return count_; }
  int64_t documents() const { return static_cast<int64_t>(starts_.size()); }

  // Throws ptdp::Error "<path>: token T at index I does not fit dtype D (0..max)", or when the
  // file cannot be written.
  void add_document(std::span<const int32_t> tokens);
  // Writes the header (and the document index): "<path>.tmp" is then a complete file.
  void finish();
  // Renames the finished "<path>.tmp" to `path`.
  void commit();

 private:
  void write(const void* data, size_t bytes);
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_, temporary_;
  TokenFileLayout layout_;
  TokenDType dtype_;
  TokenizerRecord tokenizer_;
  std::FILE* file_ = nullptr;
  int64_t count_ = 0;
  std::vector<int64_t> starts_;  // the first token of each document
  std::vector<uint8_t> bytes_;   // tokens narrowed to dtype, reused across documents
  bool committed_ = false;
};

// The tokens as one ptdp version 1 file. Throws ptdp::Error "<path>: <reason>" when there are no
// tokens, a token does not fit `dtype` or the file cannot be written; `path` is then as it was
// before the call and no "<path>.tmp" is left behind.
void write_token_file(const std::string& path, std::span<const int32_t> tokens, TokenDType dtype);

}  // namespace ptdp
