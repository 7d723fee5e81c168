#pragma once
// The two binary token-file layouts ptdp reads (docs/data-format.md describes them byte by byte).
// Both are little-endian; ptdp runs only on little-endian hosts, so headers are read in place.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptdp {

// ptdp's own format: a 24-byte header, then `count` tokens of `dtype`.
inline constexpr char kPtdpMagic[8] = {'P', 'T', 'D', 'P', 'T', 'O', 'K', '\0'};
inline constexpr uint32_t kPtdpVersion = 1;
inline constexpr size_t kPtdpHeaderBytes = 24;

struct PtdpHeader {
  char magic[8];
  uint32_t version;
  uint32_t dtype;  // TokenDType code
  uint64_t count;
};
static_assert(sizeof(PtdpHeader) == kPtdpHeaderBytes);

// Version 2 adds what a corpus of documents needs: the document index and the tokenizer that made
// the tokens. After the 24 bytes of version 1 come the document count and the length of the
// tokenizer record (JSON); then the record, the tokens and the document starts (documents + 1
// uint64: 0, the first token of each later document, count), each padded to 8 bytes.
inline constexpr uint32_t kPtdpIndexedVersion = 2;
inline constexpr size_t kPtdpIndexedHeaderBytes = 40;

struct PtdpIndexedHeader {
  PtdpHeader base;
  uint64_t documents;
  uint64_t tokenizer_bytes;
};
static_assert(sizeof(PtdpIndexedHeader) == kPtdpIndexedHeaderBytes);

inline constexpr size_t padded_to_8(size_t bytes) { return (bytes + 7) / 8 * 8; }

// llm.c's GPT-2 shards: 256 int32 (magic, version, token count, zeros), then uint16 tokens.
inline constexpr int32_t kLlmcMagic = 20240520;
inline constexpr int32_t kLlmcVersion = 1;
inline constexpr size_t kLlmcHeaderBytes = 256 * sizeof(int32_t);
// GPT-2's <|endoftext|>, which llm.c's scripts put before every document.
inline constexpr int32_t kLlmcEndOfText = 50256;

// Width of one stored token. The codes are part of the file format: never renumber.
enum class TokenDType : uint32_t { U8 = 1, U16 = 2, I32 = 3 };

size_t token_dtype_size(TokenDType dtype);
const char* token_dtype_name(TokenDType dtype);
// "u8" | "u16" | "i32"; nullopt for anything else.
std::optional<TokenDType> parse_token_dtype(std::string_view name);
// A code read from a file; nullopt when it names no known dtype.
std::optional<TokenDType> token_dtype_from_code(uint32_t code);
// Largest token value the dtype can store.
int64_t token_dtype_max(TokenDType dtype);

}  // namespace ptdp
