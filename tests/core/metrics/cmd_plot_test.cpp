// ptdp-host plot, run as a user would: the SVG it writes and its one-line errors (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "support/host_command.hpp"
#include "support/temp_dir.hpp"

namespace ptdp {
namespace {

using test::HostResult;
using test::quoted;

HostResult run_host(const std::string& args) { return test::run_host_command(PTDP_TEST_HOST, "plot " + args); }

class HostPlotCommand : public ::testing::Test {
 protected:
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = (dir_.path() / name).string();
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  test::TempDir dir_{"ptdp-plot"};
};

const char* kRun = "{\"step\":1,\"loss\":5.1}\n{\"step\":2,\"loss\":4.2,\"val_loss\":4.4}\n{\"step\":3,\"loss\":3.9}\n";

TEST_F(HostPlotCommand, WritesTheSvgOfEveryRun) {
  const std::string a = file("a.jsonl", kRun), b = file("b.jsonl", "{\"step\":1,\"loss\":4.0}\n"), out = path("loss.svg");
  HostResult result = run_host(quoted(a) + " " + quoted(b) + " --svg " + quoted(out) + " --title 'Tiny runs'");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, out + ": 2 runs, 4 steps\n");
  const std::string svg = read(out);
  EXPECT_NE(svg.find(">Tiny runs</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a.jsonl</text>"), std::string::npos);
  EXPECT_NE(svg.find(">b.jsonl</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"val-loss\""), std::string::npos);
}

TEST_F(HostPlotCommand, TheHeaderRecordAddsTheLayoutToTheLegend) {
  const std::string header =
      "{\"record\":\"header\",\"ptdp_version\":\"0.1.0\",\"manifest\":\"m.toml\",\"manifest_hash\":\"\","
      "\"layout\":{\"pipeline\":2,\"tensor\":2,\"data\":1,\"virtual_stages\":2,\"microbatches\":4,"
      "\"world_size\":4},\"device\":\"cpu\",\"host\":\"h\",\"plugins\":[],\"settings\":{}}\n";
  const std::string a = file("a.jsonl", header + kRun), out = path("loss.svg");
  HostResult result = run_host(quoted(a) + " --svg " + quoted(out));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output, out + ": 1 run, 3 steps\n");
  EXPECT_NE(read(out).find(">a.jsonl (p2 t2 d1 v2)</text>"), std::string::npos);
}

TEST_F(HostPlotCommand, RunsOfTheSameFileNameAreToldApartByPath) {
  const std::string a = file("run-a/m.jsonl", kRun), b = file("run-b/m.jsonl", kRun), out = path("loss.svg");
  HostResult result = run_host(quoted(a) + " " + quoted(b) + " --svg " + quoted(out));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string svg = read(out);
  EXPECT_NE(svg.find(">" + a + "</text>"), std::string::npos);
  EXPECT_NE(svg.find(">" + b + "</text>"), std::string::npos);
  EXPECT_NE(svg.find(">Training loss</text>"), std::string::npos);  // the default title
}

TEST_F(HostPlotCommand, BadInputIsOneLineAndExitTwo) {
  const std::string good = file("good.jsonl", kRun), out = path("loss.svg");
  const std::string missing = path("missing.jsonl");
  const std::string malformed = file("malformed.jsonl", "{\"step\":1,\"loss\":5}\n{\"step\":2,\"loss\":4\n");
  const std::string empty = file("empty.jsonl", "\n");
  const std::pair<std::string, std::string> cases[] = {
      {quoted(good) + " " + quoted(missing), missing + ": cannot open the metrics log: No such file or directory\n"},
      {quoted(malformed), malformed + ":2: not valid JSON\n"},
      {quoted(empty), empty + ": no steps in the metrics log\n"},
  };
  for (const auto& [args, expected] : cases) {
    HostResult result = run_host(args + " --svg " + quoted(out));
    EXPECT_EQ(result.exit_code, 2) << args;
    EXPECT_EQ(result.output, expected);
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  const std::string unwritable = path("no-such-folder/loss.svg");
  HostResult result = run_host(quoted(good) + " --svg " + quoted(unwritable));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.output, unwritable + ": cannot write the plot: No such file or directory\n");
}

TEST_F(HostPlotCommand, SvgIsRequired) {
  HostResult result = run_host(quoted(file("good.jsonl", kRun)));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("--svg"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace ptdp
