// A token file appears only when complete: a failed write keeps what was there before.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "data/token_dataset.hpp"
#include "data/token_file_writer.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

using test::read_bytes;
using test::ScratchDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenFileWriter, FailureMidWriteKeepsTheExistingFile) {
  ScratchDir dir;
  const std::string out = dir.file("tokens.bin");
  write_token_file(out, std::vector<int32_t>{1, 2, 3}, TokenDType::U8);
  const auto before = read_bytes(out);

  // The bad token lies past the first chunk, so part of the new file is already written.
  std::vector<int32_t> tokens(200000, 65);
  tokens[150000] = 300;
  std::string message = error_of([&] { write_token_file(out, tokens, TokenDType::U8); });
  EXPECT_EQ(message, out + ": token 300 at index 150000 does not fit dtype u8 (0..255)");
  EXPECT_EQ(read_bytes(out), before);
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  EXPECT_EQ(TokenDataset::open(out).size(), 3);
}

TEST(TokenFileWriter, FailureWithoutAnExistingFileLeavesNothing) {
  ScratchDir dir;
  const std::string out = dir.file("tokens.bin");
  EXPECT_NE(error_of([&] { write_token_file(out, std::vector<int32_t>{1, -2}, TokenDType::I32); })
                .find("token -2 at index 1 does not fit dtype i32"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST(TokenFileWriter, UncreatableTemporaryKeepsTheExistingFile) {
  ScratchDir dir;
  const std::string out = dir.file("tokens.bin");
  write_token_file(out, std::vector<int32_t>{4, 5}, TokenDType::U16);
  const auto before = read_bytes(out);
  std::filesystem::create_directory(out + ".tmp");
  std::string message = error_of([&] { write_token_file(out, std::vector<int32_t>{7}, TokenDType::U16); });
  EXPECT_EQ(message.rfind(out + ": cannot create " + out + ".tmp: ", 0), 0u) << message;
  EXPECT_EQ(read_bytes(out), before);
  EXPECT_TRUE(std::filesystem::is_directory(out + ".tmp"));  // not ours to remove
}

TEST(TokenFileWriter, RefusesAnEmptyTokenList) {
  ScratchDir dir;
  const std::string out = dir.file("tokens.bin");
  EXPECT_EQ(error_of([&] { write_token_file(out, {}, TokenDType::U8); }), out + ": no tokens to write");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(TokenFileWriter, ReplacesAnExistingFileWhenComplete) {
  ScratchDir dir;
  const std::string out = dir.file("tokens.bin");
  write_token_file(out, std::vector<int32_t>{1, 2, 3}, TokenDType::U8);
  write_token_file(out, std::vector<int32_t>{70000, 0}, TokenDType::I32);
  auto dataset = TokenDataset::open(out);
  EXPECT_EQ(dataset.dtype(), TokenDType::I32);
  EXPECT_EQ(dataset.size(), 2);
  EXPECT_EQ(dataset.token(0), 70000);
}

}  // namespace
}  // namespace ptdp
