// The safetensors files export writes read back as written; a damaged or foreign file is one
// line naming it, with every bound checked before anything is allocated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <filesystem>
#include <fstream>

#include "checkpoint/safetensors_reader.hpp"
#include "checkpoint/safetensors_writer.hpp"
#include "support/error_message.hpp"

namespace ptdp::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SafetensorsIo : public ::testing::Test {
 protected:
  SafetensorsIo() : path_((fs::temp_directory_path() / ("ptdp-st-" + std::to_string(::getpid()) + ".safetensors")).string()) {}
  ~SafetensorsIo() override { fs::remove(path_); }
  // A file of an 8-byte header length, `header` and `data`.
  void write_raw(uint64_t length, const std::string& header, const std::string& data) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << header << data;
  }
  std::string path_;
};

TEST_F(SafetensorsIo, WhatIsWrittenReadsBack) {
  write_safetensors(path_, {{"a", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b", {1}, {-7.5f}}});
  const auto read = read_safetensors(path_);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read.at("a").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(read.at("a").values, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(read.at("b").values, std::vector<float>{-7.5f});
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
}

// A write that fails half way (here the file-size limit a full disk would impose) says so and
// leaves neither the file nor its temporary behind. In a child process: the limit is process-wide.
TEST_F(SafetensorsIo, AWriteThatFailsLeavesNoTemporaryFile) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead of ending the process
    const rlimit small{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &small);
    int code = 3;
    try {
      write_safetensors(path_, {{"big", {1 << 16}, std::vector<float>(1 << 16, 1.0f)}});
    } catch (const Error& e) {
      code = std::string(e.what()).find(path_ + ": cannot write") != std::string::npos ? 0 : 4;
    }
    if (fs::exists(path_ + ".tmp")) code = 1;
    if (fs::exists(path_)) code = 2;
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the temporary file was left, 2: the file appeared, 3: nothing failed, "
                                       "4: another message";
}

TEST_F(SafetensorsIo, TensorsSharingBytesAreRefused) {
  write_raw(108, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            std::string(16, '\0'));
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr(path_ + ": tensors 'a' and 'b' overlap"));
}

TEST_F(SafetensorsIo, DamagedOrForeignFilesAreRefused) {
  write_raw(uint64_t{1} << 40, "{}", "");
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr(path_ + ": bad header length"));
  const std::string f16 = R"({"x": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})";
  write_raw(f16.size(), f16, "abcd");
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr("tensor 'x' is F16: only F32 is read"));
  const std::string beyond = R"({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})";
  write_raw(beyond.size(), beyond, "abcd");
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr("data_offsets that do not hold its shape"));
  const std::string huge = R"({"x": {"dtype": "F32", "shape": [4000000000, 4000000000], "data_offsets": [0, 4]}})";
  write_raw(huge.size(), huge, "abcd");
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr("tensor 'x' has a bad shape"));
  write_raw(4, "[1]x", "");
  EXPECT_THAT(error_of([&] { read_safetensors(path_); }), HasSubstr("not a JSON object"));
}

}  // namespace
}  // namespace ptdp::test
