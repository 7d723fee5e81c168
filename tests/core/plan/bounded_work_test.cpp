// A global batch anywhere in its documented range (up to 2^30), and a plan for 65,536 GPUs, cost
// seconds and a bounded size in every command: what a step's schedule cannot hold is refused
// naming the key, and the planner extrapolates long steps instead of replaying them.
#include <gtest/gtest.h>

#include <string>

#include "support/host_command.hpp"

namespace ptdp {
namespace {

using test::quoted;

const std::string kSource = PTDP_SOURCE_DIR;
const std::string kTiny = quoted(kSource + "/examples/gpt-tiny-cpu.toml");
const std::string kPaper = quoted(kSource + "/examples/gpt-175b-paper.toml");
const std::string kSelene = quoted(kSource + "/clusters/a100-selene.toml");
constexpr long kMemoryMib = 4096;
constexpr int kSeconds = 60;

size_t lines_of(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(BoundedWork, AHugeGlobalBatchIsRefusedNamingTheKeyByValidateRunAndPlan) {
  const std::string set = " --set parallel.global_batch=1073741824";
  for (const std::string& command :
       {"validate " + kTiny + set, "run " + kTiny + set, "plan " + kTiny + set + " --cluster " + kSelene}) {
    const auto result = test::run_host_command_bounded(PTDP_TEST_HOST, command, kMemoryMib, kSeconds);
    EXPECT_EQ(result.exit_code, 2) << command << "\n" << result.output;
    EXPECT_NE(result.output.find("parallel.global_batch: m = global_batch / (micro_batch * data) = 268435456"),
              std::string::npos)
        << result.output;
    EXPECT_EQ(result.output.find("bad_alloc"), std::string::npos) << result.output;
    EXPECT_EQ(lines_of(result.output), 1u) << result.output;
  }
}

TEST(BoundedWork, TheScheduleCommandRefusesAShapeBeyondTheBound) {
  const auto result = test::run_host_command_bounded(
      PTDP_TEST_HOST, "schedule --scheduler sched-1f1b --stages 64 --microbatches 1000000", kMemoryMib, kSeconds);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--microbatches 1000000: p*v*m = 64000000 microbatch passes"), std::string::npos)
      << result.output;
}

// The largest batch a step's schedule holds is accepted, and checked within the same bounds.
TEST(BoundedWork, TheLargestAcceptedBatchValidatesWithinBounds) {
  // p 2, v 2, d 2, b 2: m = B / 4 and p·v·m = B = 2^18.
  const auto result = test::run_host_command_bounded(
      PTDP_TEST_HOST, "validate " + kTiny + " --set parallel.global_batch=262144", kMemoryMib, kSeconds);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("m=65536"), std::string::npos) << result.output;
}

TEST(BoundedWork, APlanForSixtyFiveThousandGpusAndALargeBatchFinishesInBounds) {
  const auto result = test::run_host_command_bounded(
      PTDP_TEST_HOST,
      "plan " + kPaper + " --cluster " + kSelene +
          " --set launch.nnodes=8192 --set parallel.pipeline=8 --set parallel.data=1024 "
          "--set parallel.global_batch=16777216",
      kMemoryMib, kSeconds);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("65536 GPUs"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace ptdp
