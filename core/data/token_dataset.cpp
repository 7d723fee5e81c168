#include "data/token_dataset.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ptdp/error.hpp"

namespace ptdp {

namespace {

struct TokenRegion {
  TokenFileFormat format;
  TokenDType dtype;
  size_t offset;  // bytes before the first token
  int64_t count;
  std::vector<int64_t> document_starts;      // version 2 ptdp files: documents + 1 entries
  std::optional<TokenizerRecord> tokenizer;  // version 2 ptdp files
};

[[noreturn]] void fail(const MappedFile& file, const std::string& reason) {
  throw Error(file.path() + ": " + reason);
}

// Tokens of `dtype` from `offset` must fill the rest of the file exactly.
void check_extent(const MappedFile& file, const char* what, size_t offset, uint64_t count,
                  TokenDType dtype) {
  size_t width = token_dtype_size(dtype);
  uint64_t available = file.size() - offset;
  if (count > available / width)
    fail(file, std::string("truncated ") + what + ": the header says " + std::to_string(count) +
                   " tokens (" + std::to_string(count * width) + " bytes) but only " +
                   std::to_string(available) + " bytes follow the header");
  if (count * width != available)
    fail(file, std::string("malformed ") + what + ": " + std::to_string(available - count * width) +
                   " bytes follow the last of the " + std::to_string(count) +
                   " tokens the header announces");
  if (count == 0) fail(file, std::string("empty ") + what + ": the header announces 0 tokens");
}

// Version 2: the header, the tokenizer record, the tokens and the document starts, each padded to 8
// bytes, fill the file exactly.
TokenRegion parse_indexed_ptdp(const MappedFile& file, TokenDType dtype) {
  if (file.size() < kPtdpIndexedHeaderBytes)
    fail(file, "too short for a version 2 ptdp token file: " + std::to_string(file.size()) +
                   " bytes, the header alone is " + std::to_string(kPtdpIndexedHeaderBytes));
  PtdpIndexedHeader header;
  std::memcpy(&header, file.data(), sizeof header);
  const uint64_t width = token_dtype_size(dtype);
  // Each part is bounded by the file's size before it is multiplied, so nothing overflows.
  const uint64_t size = file.size();
  if (header.base.count == 0) fail(file, "empty ptdp token file: the header announces 0 tokens");
  if (header.documents == 0) fail(file, "malformed ptdp token file: the header announces 0 documents");
  if (header.tokenizer_bytes > size || header.base.count > size / width || header.documents > size / 8)
    fail(file, "truncated ptdp token file: the header announces " + std::to_string(header.base.count) + " tokens, " +
                   std::to_string(header.documents) + " documents and a tokenizer record of " +
                   std::to_string(header.tokenizer_bytes) + " bytes, more than the file's " + std::to_string(size) +
                   " bytes hold");
  const uint64_t tokens_at = kPtdpIndexedHeaderBytes + padded_to_8(header.tokenizer_bytes);
  const uint64_t index_at = tokens_at + padded_to_8(header.base.count * width);
  const uint64_t expected = index_at + (header.documents + 1) * 8;
  if (expected != size)
    fail(file, std::string(expected > size ? "truncated" : "malformed") + " ptdp token file: " +
                   std::to_string(header.base.count) + " tokens, " + std::to_string(header.documents) +
                   " documents and a tokenizer record of " + std::to_string(header.tokenizer_bytes) +
                   " bytes make " + std::to_string(expected) + " bytes, the file has " + std::to_string(size));
  TokenRegion region{TokenFileFormat::Ptdp, dtype, tokens_at, static_cast<int64_t>(header.base.count), {}, {}};
  region.tokenizer = TokenizerRecord::parse(
      std::string(reinterpret_cast<const char*>(file.data()) + kPtdpIndexedHeaderBytes, header.tokenizer_bytes),
      file.path());
  region.document_starts.resize(header.documents + 1);
  std::memcpy(region.document_starts.data(), file.data() + index_at, region.document_starts.size() * 8);
  const auto& starts = region.document_starts;
  for (size_t i = 0; i + 1 < starts.size(); ++i)
    if (starts[i] >= starts[i + 1])
      fail(file, "malformed document index: document " + std::to_string(i) + " starts at token " +
                     std::to_string(starts[i]) + " and the next at " + std::to_string(starts[i + 1]));
  if (starts.front() != 0 || starts.back() != region.count)
    fail(file, "malformed document index: it must run from token 0 to the token count " +
                   std::to_string(region.count) + ", it runs from " + std::to_string(starts.front()) + " to " +
                   std::to_string(starts.back()));
  return region;
}

TokenRegion parse_ptdp(const MappedFile& file) {
  if (file.size() < kPtdpHeaderBytes)
    fail(file, "too short for a ptdp token file: " + std::to_string(file.size()) +
                   " bytes, the header alone is " + std::to_string(kPtdpHeaderBytes));
  PtdpHeader header;
  std::memcpy(&header, file.data(), sizeof header);
  if (std::memcmp(header.magic, kPtdpMagic, sizeof kPtdpMagic) != 0)
    fail(file, "bad magic: not a ptdp token file (it must start with \"PTDPTOK\\0\")");
  if (header.version != kPtdpVersion && header.version != kPtdpIndexedVersion)
    fail(file, "unsupported ptdp token file version " + std::to_string(header.version) +
                   " (this build reads versions 1 and 2)");
  auto dtype = token_dtype_from_code(header.dtype);
  if (!dtype)
    fail(file, "unsupported token dtype code " + std::to_string(header.dtype) +
                   " (known: 1 = u8, 2 = u16, 3 = i32)");
  if (header.version == kPtdpIndexedVersion) return parse_indexed_ptdp(file, *dtype);
  check_extent(file, "ptdp token file", kPtdpHeaderBytes, header.count, *dtype);
  return {TokenFileFormat::Ptdp, *dtype, kPtdpHeaderBytes, static_cast<int64_t>(header.count), {}, {}};
}

TokenRegion parse_llmc(const MappedFile& file) {
  if (file.size() < kLlmcHeaderBytes)
    fail(file, "too short for an llm.c token shard: " + std::to_string(file.size()) +
                   " bytes, the header alone is " + std::to_string(kLlmcHeaderBytes));
  int32_t header[3];
  std::memcpy(header, file.data(), sizeof header);
  if (header[0] != kLlmcMagic)
    fail(file, "bad magic " + std::to_string(header[0]) + ": not an llm.c GPT-2 token shard (magic " +
                   std::to_string(kLlmcMagic) + ")");
  if (header[1] != kLlmcVersion)
    fail(file, "unsupported llm.c shard version " + std::to_string(header[1]) +
                   " (this build reads version 1: GPT-2 uint16 tokens)");
  if (header[2] < 0)
    fail(file, "malformed llm.c token shard: negative token count " + std::to_string(header[2]));
  check_extent(file, "llm.c token shard", kLlmcHeaderBytes, static_cast<uint64_t>(header[2]),
               TokenDType::U16);
  return {TokenFileFormat::Llmc, TokenDType::U16, kLlmcHeaderBytes, header[2], {}, {}};
}

TokenRegion parse_text(const MappedFile& file) {
  if (file.size() == 0) fail(file, "empty file: no tokens");
  return {TokenFileFormat::Text, TokenDType::U8, 0, static_cast<int64_t>(file.size()), {}, {}};
}

// Text has no NUL bytes; token files have them in their headers. Looking at the first kilobyte is
// what file(1) does, and covers both headers whole.
constexpr size_t kSniffBytes = 1024;

TokenRegion parse_auto(const MappedFile& file) {
  // A file that claims a binary format by its first bytes is held to it: a damaged token file
  // must not silently train as text.
  if (file.size() >= 4 && std::memcmp(file.data(), kPtdpMagic, 4) == 0) return parse_ptdp(file);
  int32_t first_word = 0;
  if (file.size() >= 4) {
    std::memcpy(&first_word, file.data(), sizeof first_word);
    if (first_word == kLlmcMagic) return parse_llmc(file);
  }
  const size_t sniffed = std::min(file.size(), kSniffBytes);
  const auto* nul = static_cast<const uint8_t*>(std::memchr(file.data(), 0, sniffed));
  if (!nul) return parse_text(file);
  // Binary, yet neither magic matched: a token file whose header is damaged, or not data at all.
  bool llmc_shaped = file.size() >= kLlmcHeaderBytes;
  for (size_t word = 3; llmc_shaped && word < kLlmcHeaderBytes / 4; ++word) {
    int32_t value;
    std::memcpy(&value, file.data() + word * 4, sizeof value);
    llmc_shaped = value == 0;
  }
  if (llmc_shaped)
    fail(file, "bad magic " + std::to_string(first_word) + ": laid out like an llm.c GPT-2 token shard "
                   "(256-word header, reserved words zero) but llm.c shards start with " +
                   std::to_string(kLlmcMagic) + "; refusing to read a damaged shard as text");
  fail(file, "binary data (a NUL byte at offset " + std::to_string(nul - file.data()) +
                 ") that is neither a ptdp token file (magic \"PTDPTOK\\0\") nor an llm.c shard (magic " +
                 std::to_string(kLlmcMagic) + ", this file starts with " + std::to_string(first_word) +
                 "); set data.format = \"text\" to train on its bytes anyway");
}

template <class T>
void widen(const uint8_t* src, int64_t count, int32_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, src + i * sizeof(T), sizeof(T));
    out[i] = static_cast<int32_t>(value);
  }
}

}  // namespace

const char* token_file_format_name(TokenFileFormat format) {
  switch (format) {
    case TokenFileFormat::Ptdp: return "ptdp";
    case TokenFileFormat::Llmc: return "llmc";
    case TokenFileFormat::Text: return "text";
  }
  return "?";
}

TokenDataset TokenDataset::open(const std::string& path, const std::string& format) {
  TokenRegion (*parse)(const MappedFile&) = nullptr;
  if (format == "auto") parse = parse_auto;
  else if (format == "ptdp") parse = parse_ptdp;
  else if (format == "llmc") parse = parse_llmc;
  else if (format == "text") parse = parse_text;
  else throw Error(path + ": unknown data format '" + format + "' (expected auto, ptdp, llmc or text)");
  auto file = std::make_shared<const MappedFile>(path);
  TokenRegion region = parse(*file);
  TokenDataset dataset(std::move(file), region.format, region.dtype, region.offset, region.count);
  dataset.tokenizer_ = std::move(region.tokenizer);
  // The file says which tokenizer made it: a token that tokenizer cannot give means a damaged
  // file, or tokens of another tokenizer, which the model would learn as the wrong pieces.
  if (dataset.tokenizer_ && dataset.max_token_ >= dataset.tokenizer_->vocab)
    throw Error(path + ": token " + std::to_string(dataset.max_token_) + " at index " +
                std::to_string(dataset.max_token_index_) + " is outside the vocabulary of " +
                std::to_string(dataset.tokenizer_->vocab) + " ids the file records (" + dataset.tokenizer_->describe() +
                "): the file is damaged or its tokens come from another tokenizer");
  if (!region.document_starts.empty()) dataset.documents_ = static_cast<int64_t>(region.document_starts.size()) - 1;
  return dataset;
}

TokenDataset::TokenDataset(std::shared_ptr<const MappedFile> file, TokenFileFormat format,
                           TokenDType dtype, size_t offset, int64_t count)
    : file_(std::move(file)), format_(format), dtype_(dtype), tokens_(file_->data() + offset),
      count_(count) {
  scan_tokens();
}

void TokenDataset::scan_tokens() {
  constexpr int64_t kChunk = 1 << 16;
  std::unique_ptr<int32_t[]> buffer(new int32_t[kChunk]);
  max_token_ = -1;
  int64_t end_of_text = 0;
  for (int64_t first = 0; first < count_; first += kChunk) {
    int64_t n = std::min(kChunk, count_ - first);
    read(first, n, buffer.get());
    for (int64_t i = 0; i < n; ++i) {
      end_of_text += buffer[i] == kLlmcEndOfText;
      if (buffer[i] < 0)
        throw Error(path() + ": token " + std::to_string(buffer[i]) + " at index " +
                    std::to_string(first + i) + " is negative");
      if (buffer[i] > max_token_) {
        max_token_ = buffer[i];
        max_token_index_ = first + i;
      }
    }
  }
  if (format_ == TokenFileFormat::Llmc) documents_ = end_of_text;
}

int32_t TokenDataset::token(int64_t i) const {
  int32_t value;
  read(i, 1, &value);
  return value;
}

void TokenDataset::read(int64_t first, int64_t count, int32_t* out) const {
  PTDP_CHECK(first >= 0 && count >= 0 && first + count <= count_,
             path() + ": tokens [" + std::to_string(first) + ", " + std::to_string(first + count) +
                 ") lie outside the file's " + std::to_string(count_) + " tokens");
  const uint8_t* src = tokens_ + first * static_cast<int64_t>(token_dtype_size(dtype_));
  switch (dtype_) {
    case TokenDType::U8: widen<uint8_t>(src, count, out); break;
    case TokenDType::U16: widen<uint16_t>(src, count, out); break;
    case TokenDType::I32: widen<int32_t>(src, count, out); break;
  }
}

void TokenDataset::check_vocab(int vocab) const {
  if (tokenizer_ && tokenizer_->vocab > vocab)
    throw Error(path() + ": its tokens come from " + tokenizer_->describe() + ", a vocabulary of " +
                std::to_string(tokenizer_->vocab) + " ids, larger than the model's vocabulary of " +
                std::to_string(vocab) + " (model.vocab must be at least " + std::to_string(tokenizer_->vocab) + ")");
  if (max_token_ >= vocab)
    throw Error(path() + ": token " + std::to_string(max_token_) + " at index " +
                std::to_string(max_token_index_) + " does not fit the model's vocabulary of " +
                std::to_string(vocab) + " (model.vocab must be at least " +
                std::to_string(max_token_ + 1) + ")");
}

}  // namespace ptdp
