#include "metrics/metrics_reader.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <spdlog/spdlog.h>

#include "metrics/run_header.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace {

// A line's reason for being rejected; the caller adds where.
struct LineError {
  std::string reason;
};

double number_field(const nlohmann::json& line, const char* key, bool required) {
  auto it = line.find(key);
  if (it == line.end()) {
    if (required) throw LineError{std::string("no \"") + key + "\""};
    return NAN;
  }
  if (it->is_null()) return NAN;
  if (!it->is_number()) throw LineError{std::string("\"") + key + "\" is " + it->type_name() + ", not a number"};
  return it->get<double>();
}

// The step of a line, or nothing for a run's header record (metrics/run_header.hpp).
std::optional<StepMetrics> parse_line(const std::string& text) {
  nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded()) throw LineError{"not valid JSON"};
  if (!line.is_object()) throw LineError{std::string("a JSON ") + line.type_name() + ", not an object"};
  if (is_run_header(line)) return std::nullopt;
  auto step = line.find("step");
  if (step == line.end()) throw LineError{"no \"step\""};
  if (!step->is_number_integer()) throw LineError{"\"step\" is not an integer"};
  StepMetrics metrics;
  metrics.step = step->get<int64_t>();
  metrics.loss = number_field(line, "loss", true);
  metrics.grad_norm = number_field(line, "grad_norm", false);
  metrics.lr = number_field(line, "lr", false);
  metrics.tokens_per_s = number_field(line, "tokens_per_s", false);
  metrics.tflops_per_gpu = number_field(line, "tflops_per_gpu", false);
  metrics.step_time_s = number_field(line, "step_time_s", false);
  metrics.elapsed_s = number_field(line, "elapsed_s", false);
  if (line.contains("val_loss")) metrics.val_loss = number_field(line, "val_loss", true);
  if (line.contains("loss_scale")) metrics.loss_scale = number_field(line, "loss_scale", true);
  if (auto skipped = line.find("skipped"); skipped != line.end()) {
    if (!skipped->is_boolean()) throw LineError{std::string("\"skipped\" is ") + skipped->type_name() + ", not a boolean"};
    metrics.skipped = skipped->get<bool>();
  }
  return metrics;
}

// The next line without its newline, or nullopt at the end of the file; `complete` says whether
// a newline ended it. Never holds more than kMaxMetricsLineBytes, whatever the file is.
std::optional<std::string> next_line(std::streambuf& in, bool& complete) {
  std::string line;
  for (int c = in.sbumpc(); c != std::char_traits<char>::eof(); c = in.sbumpc()) {
    if (c == '\n') {
      complete = true;
      return line;
    }
    if (line.size() == kMaxMetricsLineBytes)
      throw LineError{"longer than " + std::to_string(kMaxMetricsLineBytes >> 20) + " MiB: not a metrics line"};
    line.push_back(static_cast<char>(c));
  }
  complete = false;
  if (line.empty()) return std::nullopt;
  return line;
}

}  // namespace

std::vector<StepMetrics> read_metrics_log(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw Error(path + ": is a directory, not a metrics log");
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the metrics log: " + std::strerror(errno));
  std::map<int64_t, StepMetrics> by_step;
  int64_t line_number = 0;
  for (;;) {
    ++line_number;
    bool complete = false;
    std::optional<std::string> text;
    try {
      text = next_line(*in.rdbuf(), complete);
      if (!text) break;
      if (text->find_first_not_of(" \t\r") == std::string::npos) continue;
      if (auto metrics = parse_line(*text)) by_step[metrics->step] = *metrics;
    } catch (const LineError& e) {
      if (text && !complete) {
        spdlog::warn("{}:{}: skipped an unfinished last line ({}): the run stopped while writing it", path,
                     line_number, e.reason);
        break;
      }
      throw Error(path + ":" + std::to_string(line_number) + ": " + e.reason);
    }
  }
  if (in.bad()) throw Error(path + ": cannot read the metrics log: " + std::strerror(errno));
  std::vector<StepMetrics> steps;
  steps.reserve(by_step.size());
  for (auto& [step, metrics] : by_step) steps.push_back(metrics);
  return steps;
}

}  // namespace ptdp
