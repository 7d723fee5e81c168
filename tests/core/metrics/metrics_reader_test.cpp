// Reading back the metrics log: what MetricsLog writes, nulls, resumed runs and bad lines.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <utility>

#include "metrics/metrics_log.hpp"
#include "metrics/metrics_reader.hpp"
#include "ptdp/error.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

std::string write_file(const test::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// The message of the ptdp::Error that reading `path` throws, or "" when it reads.
std::string read_error(const std::string& path) {
  try {
    read_metrics_log(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsReader, ReadsWhatMetricsLogWrites) {
  test::TempDir dir("ptdp-metrics");
  const std::string path = (dir.path() / "run.jsonl").string();
  {
    MetricsLog log(path);
    for (int64_t step = 1; step <= 3; ++step) {
      StepMetrics m;
      m.step = step;
      m.loss = 6.0 - static_cast<double>(step);
      m.grad_norm = 0.5;
      m.lr = 1e-3 * static_cast<double>(step);
      m.tokens_per_s = 1000.5;
      m.tflops_per_gpu = 0.0125;
      m.step_time_s = 0.25;
      m.elapsed_s = 0.25 * static_cast<double>(step);
      if (step == 2) m.val_loss = 4.5;
      log.write(m);
    }
  }
  auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 3u);
  for (int64_t i = 0; i < 3; ++i) {
    const auto& m = steps[static_cast<size_t>(i)];
    EXPECT_EQ(m.step, i + 1);
    EXPECT_DOUBLE_EQ(m.loss, 5.0 - static_cast<double>(i));
    EXPECT_DOUBLE_EQ(m.grad_norm, 0.5);
    EXPECT_DOUBLE_EQ(m.lr, 1e-3 * static_cast<double>(i + 1));
    EXPECT_DOUBLE_EQ(m.tokens_per_s, 1000.5);
    EXPECT_DOUBLE_EQ(m.tflops_per_gpu, 0.0125);
    EXPECT_DOUBLE_EQ(m.step_time_s, 0.25);
    EXPECT_DOUBLE_EQ(m.elapsed_s, 0.25 * static_cast<double>(i + 1));
    EXPECT_EQ(m.val_loss.has_value(), i == 1);
  }
  EXPECT_DOUBLE_EQ(*steps[1].val_loss, 4.5);
}

TEST(MetricsReader, ReadsTheLossScaleOfAnFp16Run) {
  test::TempDir dir("ptdp-metrics");
  const std::string path = (dir.path() / "fp16.jsonl").string();
  {
    MetricsLog log(path);
    StepMetrics m;
    m.step = 1;
    m.loss = 5.5;
    m.grad_norm = NAN;  // a skipped step's norm is not finite
    m.loss_scale = 65536;
    m.skipped = true;
    log.write(m);
    m.step = 2;
    m.grad_norm = 0.75;
    m.loss_scale = 32768;
    m.skipped = false;
    log.write(m);
    StepMetrics fp32;
    fp32.step = 3;
    fp32.loss = 5.0;
    log.write(fp32);
  }
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_NE(first.find("\"grad_norm\":null"), std::string::npos) << first;
  EXPECT_NE(first.find("\"loss_scale\":65536.0,\"skipped\":true"), std::string::npos) << first;
  const auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].loss_scale, 65536.0);
  EXPECT_TRUE(steps[0].skipped);
  EXPECT_TRUE(std::isnan(steps[0].grad_norm));
  EXPECT_EQ(steps[1].loss_scale, 32768.0);
  EXPECT_FALSE(steps[1].skipped);
  EXPECT_FALSE(steps[2].loss_scale.has_value()) << "a run without fp16 writes no loss scale";
  EXPECT_EQ(read_error(write_file(dir, "bad.jsonl", "{\"step\":1,\"loss\":2,\"skipped\":1}\n")),
            (dir.path() / "bad.jsonl").string() + ":1: \"skipped\" is number, not a boolean");
}

TEST(MetricsReader, NullAndMissingValuesReadAsNaN) {
  test::TempDir dir("ptdp-metrics");
  const std::string path = write_file(dir, "nulls.jsonl",
                                      "{\"step\":1,\"loss\":null,\"grad_norm\":null,\"lr\":0.001}\n"
                                      "{\"step\":2,\"loss\":3.5,\"val_loss\":null}\n");
  auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_TRUE(std::isnan(steps[0].loss));
  EXPECT_TRUE(std::isnan(steps[0].grad_norm));
  EXPECT_DOUBLE_EQ(steps[0].lr, 0.001);
  EXPECT_TRUE(std::isnan(steps[0].tokens_per_s));  // absent
  EXPECT_FALSE(steps[0].val_loss.has_value());
  EXPECT_DOUBLE_EQ(steps[1].loss, 3.5);
  ASSERT_TRUE(steps[1].val_loss.has_value());  // a validation pass that diverged
  EXPECT_TRUE(std::isnan(*steps[1].val_loss));
}

TEST(MetricsReader, ResumedRunKeepsTheLaterLineOfAStepAndBlankLinesAreSkipped) {
  test::TempDir dir("ptdp-metrics");
  // Steps 1-3, then a run resumed from the checkpoint at step 2 logs 3 and 4.
  const std::string path = write_file(dir, "resumed.jsonl",
                                      "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,\"loss\":3.9}\n"
                                      "\n{\"step\":3,\"loss\":3.1}\n{\"step\":4,\"loss\":2.8}\n");
  auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 4u);
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].step, static_cast<int64_t>(i + 1));
  EXPECT_DOUBLE_EQ(steps[2].loss, 3.1);
  EXPECT_DOUBLE_EQ(steps[3].loss, 2.8);
}

TEST(MetricsReader, EmptyFileHasNoSteps) {
  test::TempDir dir("ptdp-metrics");
  EXPECT_TRUE(read_metrics_log(write_file(dir, "empty.jsonl", "")).empty());
}

TEST(MetricsReader, BadLineIsNamedWithItsNumberAndReason) {
  test::TempDir dir("ptdp-metrics");
  const std::string good = "{\"step\":1,\"loss\":5}\n\n";  // the blank line still counts
  const std::pair<std::string, std::string> cases[] = {
      {"{\"step\":2,\"loss\":", ":3: not valid JSON"},
      {"[1, 2]", ":3: a JSON array, not an object"},
      {"{\"loss\":4}", ":3: no \"step\""},
      {"{\"step\":2.5,\"loss\":4}", ":3: \"step\" is not an integer"},
      {"{\"step\":2}", ":3: no \"loss\""},
      {"{\"step\":2,\"loss\":\"4\"}", ":3: \"loss\" is string, not a number"},
      {"{\"step\":2,\"loss\":4,\"lr\":true}", ":3: \"lr\" is boolean, not a number"},
  };
  for (const auto& [line, expected] : cases) {
    const std::string path = write_file(dir, "bad.jsonl", good + line + "\n{\"step\":3,\"loss\":3}\n");
    EXPECT_EQ(read_error(path), path + expected) << line;
  }
}

TEST(MetricsReader, MissingFileOrFolderIsNamed) {
  test::TempDir dir("ptdp-metrics");
  const std::string missing = (dir.path() / "missing.jsonl").string();
  EXPECT_EQ(read_error(missing), missing + ": cannot open the metrics log: No such file or directory");
  EXPECT_EQ(read_error(dir.path().string()), dir.path().string() + ": is a directory, not a metrics log");
}

TEST(MetricsReader, AnUnfinishedLastLineIsSkippedAndTheRestIsRead) {
  test::TempDir dir("ptdp-metrics");
  // What a full disk or a killed run leaves: the last line cut short, without its newline.
  const std::string path =
      write_file(dir, "cut.jsonl", "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4}\n{\"step\":3,\"lo");
  const auto steps = read_metrics_log(path);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps.back().step, 2);
  // A bad line that a newline ends is no accident of a full disk: still an error.
  const std::string bad = write_file(dir, "bad-last.jsonl", "{\"step\":1,\"loss\":5}\n{\"step\":3,\"lo\n");
  EXPECT_EQ(read_error(bad), bad + ":2: not valid JSON");
}

TEST(MetricsReader, AFileWithoutLineBreaksIsRefusedWithoutReadingItWhole) {
  // /dev/zero never ends; the reader stops at the longest line a metrics log can have.
  EXPECT_EQ(read_error("/dev/zero"), "/dev/zero:1: longer than 1 MiB: not a metrics line");
}

}  // namespace
}  // namespace ptdp
