// `ptdp-host validate`: exit 0 and a summary for a good manifest, exit 2 and one line naming file,
// line and key for a broken one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <cstdio>
#include <string>

#include "manifest_test_support.hpp"

namespace ptdp::test {
namespace {

using ::testing::HasSubstr;

struct Result {
  int status = -1;
  std::string output;  // stdout and stderr
};

Result run_host(const std::string& args) {
  Result result;
  const std::string command = std::string("'") + PTDP_TEST_HOST + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    ADD_FAILURE() << "popen failed for " << command;
    return result;
  }
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The manifest's data.path: validate reads the data as a run does.
void write_corpus(const TempDir& dir) { dir.write("corpus.txt", std::string(4096, 'a') + "\n"); }

TEST(ValidateCommand, GoodManifestExitsZeroWithASummary) {
  TempDir dir;
  write_corpus(dir);
  const auto file = dir.write("good.toml", edited(kManifest, {{"vocab = 256", "vocab = 255"}}));
  const Result r = run_host("validate '" + file.string() + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("8 = pipeline 2 x tensor 2 x data 2"));
  EXPECT_THAT(r.output, HasSubstr("microbatches m = 4"));
  EXPECT_THAT(r.output, HasSubstr("parameters   "));
  EXPECT_THAT(r.output, HasSubstr("note         model.vocab 255 padded to 256 so tensor=2 divides it"));
  EXPECT_THAT(r.output, HasSubstr("data         1 file, 4097 tokens read"));
}

TEST(ValidateCommand, BrokenManifestExitsTwoWithOneLine) {
  TempDir dir;
  const std::string text = edited(kManifest, {{"heads = 8", "heads = 6"}});
  const auto file = dir.write("broken.toml", text);
  const Result r = run_host("validate '" + file.string() + "'");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output, file.string() + ":" + std::to_string(line_of(text, "heads = 6")) +
                          ":1: model.heads: hidden (64) must be divisible by heads (6)\n");
}

TEST(ValidateCommand, OverridesApplyAndAreNamed) {
  TempDir dir;
  write_corpus(dir);
  const auto file = dir.write("good.toml", kManifest);
  const Result ok = run_host("validate --set run.steps=3 --set parallel.recompute=full '" + file.string() + "'");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_THAT(ok.output, HasSubstr("recompute full"));
  const Result bad = run_host("validate '" + file.string() + "' --set parallel.tensor=3");
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.output, ::testing::StartsWith("--set parallel.tensor=3: parallel.tensor: "));
}

TEST(ValidateCommand, PluginsAndScheduleAreCheckedUnlessManifestOnly) {
  TempDir dir;
  write_corpus(dir);
  const auto file = dir.write("good.toml", kManifest);
  const Result misnamed = run_host("validate '" + file.string() + "' --set plugins.communicator=comm-ucxx");
  EXPECT_EQ(misnamed.status, 2);
  EXPECT_THAT(misnamed.output, HasSubstr("plugins.communicator: "));
  EXPECT_THAT(misnamed.output, HasSubstr("comm-ucxx"));
  const Result option = run_host("validate '" + file.string() + "' --set plugins.options.communicator.colour=1");
  EXPECT_EQ(option.status, 2);
  EXPECT_THAT(option.output,
              HasSubstr("plugins.options.communicator: plugin 'comm-ucx': unknown config key 'colour'"));
  const Result schedule = run_host("validate '" + file.string() + "' --set plugins.scheduler=sched-1f1b");
  EXPECT_EQ(schedule.status, 2);
  EXPECT_THAT(schedule.output, HasSubstr("plugins.scheduler: sched-1f1b runs one model chunk per stage"));
  const Result planning =
      run_host("validate --manifest-only '" + file.string() + "' --set plugins.communicator=comm-ucxx");
  EXPECT_EQ(planning.status, 0) << planning.output;
  const Result good = run_host("validate '" + file.string() + "'");
  EXPECT_EQ(good.status, 0) << good.output;
  EXPECT_THAT(good.output, HasSubstr("schedule     sched-interleaved verified for p=2 v=2 m=4"));
}

TEST(ValidateCommand, MissingFileExitsTwo) {
  const Result r = run_host("validate /nonexistent/ptdp.toml");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output, "/nonexistent/ptdp.toml: cannot read manifest: No such file or directory\n");
}

// A FIFO nobody writes to would block a reader forever: validate and data info refuse it at once
// (the timeout is the test's guard, not the behaviour).
TEST(ValidateCommand, AFifoIsRefusedInsteadOfWaitedOn) {
  const std::string fifo = (std::filesystem::temp_directory_path() / ("ptdp-fifo-" + std::to_string(::getpid()))).string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Result validate = run_host("validate " + fifo);
  EXPECT_EQ(validate.status, 2);
  EXPECT_EQ(validate.output, fifo + ": cannot read manifest: a FIFO or socket, not a file\n");
  const Result info = run_host("data info " + fifo);
  EXPECT_NE(info.status, 0);
  EXPECT_NE(info.output.find(fifo + ": not a regular file"), std::string::npos) << info.output;
  std::filesystem::remove(fifo);
}

TEST(ValidateCommand, AnEndlessFileIsRefusedWithinBoundedMemory) {
  // With at most 1 GB of address space, reading /dev/zero whole would fail the process instead.
  const std::string command = std::string("ulimit -v 1000000; timeout 60 '") + PTDP_TEST_HOST +
                              "' validate /dev/zero 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2) << output;
  EXPECT_EQ(output, "/dev/zero: not a manifest: more than 4 MiB (a manifest is a few kilobytes)\n");
}

TEST(ValidateCommand, HelpDescribesSet) {
  const Result r = run_host("validate --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("--set"));
  EXPECT_THAT(r.output, HasSubstr("MANIFEST"));
}

}  // namespace
}  // namespace ptdp::test
