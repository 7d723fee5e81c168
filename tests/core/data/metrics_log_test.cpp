// The per-step metrics log: one JSON object per line, readable while the run goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "metrics/metrics_log.hpp"
#include "ptdp/error.hpp"
#include "scratch_dir.hpp"

namespace ptdp {
namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

StepMetrics step_metrics(int64_t step, double loss) {
  StepMetrics m;
  m.step = step;
  m.loss = loss;
  m.grad_norm = 0.5 * static_cast<double>(step);
  m.lr = 1e-3;
  m.tokens_per_s = 12345.5;
  m.tflops_per_gpu = 0.25;
  m.step_time_s = 0.125;
  m.elapsed_s = 0.125 * static_cast<double>(step);
  return m;
}

TEST(MetricsLog, EveryLineIsAJsonObjectWrittenAtOnce) {
  test::ScratchDir dir;
  const std::string path = dir.file("metrics.jsonl");
  MetricsLog log(path);
  log.write(step_metrics(1, 5.5));
  StepMetrics with_validation = step_metrics(2, 5.25);
  with_validation.val_loss = 5.375;
  log.write(with_validation);

  // Read while the log is still open: each line is on disk as soon as it is written.
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_EQ(lines[0]["loss"], 5.5);
  EXPECT_EQ(lines[0]["grad_norm"], 0.5);
  EXPECT_EQ(lines[0]["lr"], 1e-3);
  EXPECT_EQ(lines[0]["tokens_per_s"], 12345.5);
  EXPECT_EQ(lines[0]["tflops_per_gpu"], 0.25);
  EXPECT_EQ(lines[0]["step_time_s"], 0.125);
  EXPECT_EQ(lines[0]["elapsed_s"], 0.125);
  EXPECT_FALSE(lines[0].contains("val_loss"));
  EXPECT_EQ(lines[1]["val_loss"], 5.375);
  EXPECT_EQ(lines[1]["elapsed_s"], 0.25);

  log.write(step_metrics(3, std::nan("")));
  lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[2]["loss"].is_null());  // a diverged loss stays valid JSON
}

TEST(MetricsLog, AppendKeepsEarlierStepsAndTruncateStartsAfresh) {
  test::ScratchDir dir;
  const std::string path = dir.file("metrics.jsonl");
  { MetricsLog(path).write(step_metrics(1, 4.0)); }
  { MetricsLog(path, true).write(step_metrics(2, 3.0)); }
  auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["step"], 2);
  { MetricsLog(path).write(step_metrics(7, 2.0)); }
  lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["step"], 7);
}

TEST(MetricsLog, UnopenablePathIsNamed) {
  test::ScratchDir dir;
  const std::string path = dir.file("no-such-dir/metrics.jsonl");
  try {
    MetricsLog log(path);
    FAIL() << "opened " << path;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot open the metrics log: No such file or directory");
  }
}

}  // namespace
}  // namespace ptdp
