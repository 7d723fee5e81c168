// Opening token files: the ptdp format, llm.c shards, raw text, and every malformed file.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "data/token_dataset.hpp"
#include "data/token_file_writer.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

using test::put;
using test::ScratchDir;
using test::write_bytes;

std::vector<int32_t> all_tokens(const TokenDataset& dataset) {
  std::vector<int32_t> tokens(static_cast<size_t>(dataset.size()));
  dataset.read(0, dataset.size(), tokens.data());
  return tokens;
}

std::vector<uint8_t> ptdp_header(uint32_t version, uint32_t dtype, uint64_t count) {
  std::vector<uint8_t> bytes(std::begin(kPtdpMagic), std::end(kPtdpMagic));
  put(bytes, version);
  put(bytes, dtype);
  put(bytes, count);
  return bytes;
}

std::vector<uint8_t> llmc_shard(int32_t magic, int32_t version, int32_t count,
                                const std::vector<uint16_t>& tokens) {
  std::vector<uint8_t> bytes;
  put(bytes, magic);
  put(bytes, version);
  put(bytes, count);
  bytes.resize(kLlmcHeaderBytes, 0);
  for (uint16_t t : tokens) put(bytes, t);
  return bytes;
}

TEST(TokenDataset, PtdpFormatRoundTripsEveryDtype) {
  ScratchDir dir;
  for (TokenDType dtype : {TokenDType::U8, TokenDType::U16, TokenDType::I32}) {
    const auto max = static_cast<int32_t>(token_dtype_max(dtype));
    const std::vector<int32_t> tokens = {3, 0, max, 1, 255, 17, max - 1};
    const std::string path = dir.file(std::string("tokens-") + token_dtype_name(dtype) + ".bin");
    write_token_file(path, tokens, dtype);
    EXPECT_EQ(test::read_bytes(path).size(), kPtdpHeaderBytes + tokens.size() * token_dtype_size(dtype));

    for (const char* format : {"auto", "ptdp"}) {
      auto dataset = TokenDataset::open(path, format);
      EXPECT_EQ(dataset.format(), TokenFileFormat::Ptdp);
      EXPECT_EQ(dataset.dtype(), dtype);
      EXPECT_EQ(dataset.size(), static_cast<int64_t>(tokens.size()));
      EXPECT_EQ(all_tokens(dataset), tokens);
      EXPECT_EQ(dataset.token(2), max);
      EXPECT_EQ(dataset.max_token(), max);
    }
  }
}

TEST(TokenDataset, ReadsLlmcGpt2Shard) {
  ScratchDir dir;
  const std::vector<uint16_t> tokens = {50256, 464, 2068, 7586, 21831, 50256, 0};
  const std::string path = dir.file("shard_000000.bin");
  write_bytes(path, llmc_shard(kLlmcMagic, kLlmcVersion, static_cast<int32_t>(tokens.size()), tokens));

  for (const char* format : {"auto", "llmc"}) {
    auto dataset = TokenDataset::open(path, format);
    EXPECT_EQ(dataset.format(), TokenFileFormat::Llmc);
    EXPECT_EQ(dataset.dtype(), TokenDType::U16);
    ASSERT_EQ(dataset.size(), 7);
    EXPECT_EQ(all_tokens(dataset), std::vector<int32_t>(tokens.begin(), tokens.end()));
    EXPECT_EQ(dataset.max_token(), 50256);
    EXPECT_NO_THROW(dataset.check_vocab(50257));
  }
}

TEST(TokenDataset, AnyOtherFileWithoutNulBytesIsRawBytes) {
  ScratchDir dir;
  const std::string path = dir.file("book.txt");
  write_bytes(path, {'A', 'b', '\n', 0xff, 0x01, 'z'});
  auto dataset = TokenDataset::open(path);
  EXPECT_EQ(dataset.format(), TokenFileFormat::Text);
  EXPECT_EQ(dataset.dtype(), TokenDType::U8);
  EXPECT_EQ(all_tokens(dataset), (std::vector<int32_t>{'A', 'b', '\n', 255, 1, 'z'}));
  EXPECT_EQ(dataset.max_token(), 255);
  EXPECT_NO_THROW(dataset.check_vocab(256));

  // "text" reads even a binary token file as its bytes.
  const std::string binary = dir.file("tokens.bin");
  write_token_file(binary, std::vector<int32_t>{1, 2, 3}, TokenDType::U8);
  auto as_text = TokenDataset::open(binary, "text");
  EXPECT_EQ(as_text.format(), TokenFileFormat::Text);
  EXPECT_EQ(as_text.size(), static_cast<int64_t>(kPtdpHeaderBytes + 3));
  EXPECT_EQ(as_text.token(0), 'P');
}

TEST(TokenDataset, CopiesShareTheMapping) {
  ScratchDir dir;
  const std::string path = dir.file("tokens.bin");
  write_token_file(path, std::vector<int32_t>{9, 8, 7}, TokenDType::U16);
  std::optional<TokenDataset> copy;
  {
    auto dataset = TokenDataset::open(path);
    copy = dataset;
  }
  EXPECT_EQ(copy->token(0), 9);
  EXPECT_EQ(copy->token(2), 7);
}

TEST(TokenDataset, VocabCheckNamesFileTokenAndVocab) {
  ScratchDir dir;
  const std::string path = dir.file("gpt2.bin");
  write_bytes(path, llmc_shard(kLlmcMagic, kLlmcVersion, 4, {10, 50256, 3, 50256}));
  auto dataset = TokenDataset::open(path);
  try {
    dataset.check_vocab(256);
    FAIL() << "a 256-token vocabulary accepted token 50256";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("token 50256 at index 1"), std::string::npos) << message;
    EXPECT_NE(message.find("vocabulary of 256"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

struct MalformedCase {
  const char* name;
  std::vector<uint8_t> bytes;
  const char* format;
  const char* reason;  // must appear in the message
};

std::vector<uint8_t> ptdp_with_tokens(uint32_t version, uint32_t dtype, uint64_t count,
                                      size_t token_bytes) {
  auto bytes = ptdp_header(version, dtype, count);
  bytes.resize(bytes.size() + token_bytes, 1);
  return bytes;
}

std::vector<uint8_t> first_bytes(std::vector<uint8_t> bytes, size_t n) {
  bytes.resize(n);
  return bytes;
}

std::vector<MalformedCase> malformed_cases() {
  auto bad_magic = ptdp_with_tokens(1, 1, 4, 4);
  std::memcpy(bad_magic.data(), "PTDPXXX", 8);
  auto negative = ptdp_header(1, 3, 2);
  put(negative, int32_t{5});
  put(negative, int32_t{-3});
  return {
      {"ptdp_too_short", first_bytes(ptdp_header(1, 1, 4), 20), "auto", "too short for a ptdp token file: 20 bytes"},
      {"ptdp_bad_magic", bad_magic, "auto", "bad magic: not a ptdp token file"},
      {"ptdp_named_but_text", std::vector<uint8_t>(40, 'a'), "ptdp", "bad magic: not a ptdp token file"},
      {"ptdp_version", ptdp_with_tokens(3, 1, 4, 4), "auto", "unsupported ptdp token file version 3"},
      {"ptdp_dtype", ptdp_with_tokens(1, 9, 4, 4), "auto", "unsupported token dtype code 9"},
      {"ptdp_count_beyond_file", ptdp_with_tokens(1, 2, 10, 8), "auto",
       "truncated ptdp token file: the header says 10 tokens (20 bytes) but only 8 bytes follow"},
      {"ptdp_truncated_token", ptdp_with_tokens(1, 3, 2, 7), "auto", "truncated ptdp token file"},
      {"ptdp_trailing_bytes", ptdp_with_tokens(1, 1, 4, 6), "auto", "2 bytes follow the last of the 4 tokens"},
      {"ptdp_no_tokens", ptdp_header(1, 1, 0), "auto", "the header announces 0 tokens"},
      {"ptdp_negative_token", negative, "auto", "token -3 at index 1 is negative"},
      {"llmc_too_short", first_bytes(llmc_shard(kLlmcMagic, 1, 0, {}), 500), "auto", "too short for an llm.c token shard: 500 bytes"},
      {"llmc_bad_magic", llmc_shard(20240801, 7, 2, {1, 2}), "llmc", "bad magic 20240801"},
      {"llmc_version", llmc_shard(kLlmcMagic, 2, 2, {1, 2}), "auto", "unsupported llm.c shard version 2"},
      {"llmc_count_beyond_file", llmc_shard(kLlmcMagic, 1, 100, {1, 2, 3}), "auto",
       "truncated llm.c token shard: the header says 100 tokens (200 bytes) but only 6 bytes follow"},
      {"llmc_trailing_bytes", llmc_shard(kLlmcMagic, 1, 1, {1, 2, 3}), "auto", "4 bytes follow the last of the 1 tokens"},
      {"llmc_negative_count", llmc_shard(kLlmcMagic, 1, -5, {}), "auto", "negative token count -5"},
      {"empty_text", {}, "auto", "empty file: no tokens"},
      // Under auto a binary file is held to a token format, never trained as text.
      {"llmc_near_magic", llmc_shard(kLlmcMagic + 1, 1, 2, {1, 2}), "auto",
       "bad magic 20240521: laid out like an llm.c GPT-2 token shard"},
      {"binary_without_magic", {'P', 'K', 3, 4, 0, 0, 'x'}, "auto",
       "binary data (a NUL byte at offset 4) that is neither a ptdp token file"},
      {"nul_after_text", {'a', 'b', '\n', 0}, "auto", "set data.format = \"text\" to train on its bytes anyway"},
      {"unknown_format", {'a', 'b'}, "json", "unknown data format 'json'"},
  };
}

void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class MalformedTokenFile : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTokenFile, FailsWithOneLineNamingFileAndReason) {
  const MalformedCase& c = GetParam();
  ScratchDir dir;
  const std::string path = dir.file(std::string(c.name) + ".bin");
  write_bytes(path, c.bytes);
  try {
    TokenDataset::open(path, c.format);
    FAIL() << c.name << " opened without an error";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.reason), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCase, MalformedTokenFile, ::testing::ValuesIn(malformed_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TokenDataset, MissingFileAndDirectoryAreNamed) {
  ScratchDir dir;
  const std::string missing = dir.file("absent.bin");
  EXPECT_THROW(
      {
        try {
          TokenDataset::open(missing);
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
          throw;
        }
      },
      Error);
  const std::string folder = dir.file("folder");
  std::filesystem::create_directory(folder);
  EXPECT_THROW(
      {
        try {
          TokenDataset::open(folder);
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()), folder + ": not a regular file");
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace ptdp
