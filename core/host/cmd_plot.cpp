// ptdp-host plot METRICS.jsonl... --svg OUT.svg [--title T] [--bits-per-byte]: draws the loss curves of metrics logs
// (ptdp-host run --metrics). Exit status 0 when written, 2 with the one-line reason when not.
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "command_registry.hpp"
#include "data/bytes_per_token.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_config_json.hpp"
#include "metrics/loss_curve_svg.hpp"
#include "metrics/metrics_reader.hpp"
#include "metrics/run_header.hpp"
#include "ptdp/error.hpp"

namespace ptdp::host {
namespace {

struct PlotOptions {
  std::vector<std::string> metrics;
  std::string svg, title;
  bool bits_per_byte = false;
};

// Losses per token (nats) as bits per byte of the text the run's tokens stand for, found from the
// data and tokenizer the log's header names: what makes runs of different tokenizers comparable.
void to_bits_per_byte(LossCurve& curve, const std::string& path) {
  const auto header = read_run_header(path);
  if (!header) throw Error(path + ": no header record, so the run's data are unknown; --bits-per-byte needs them");
  const RunConfig config =
      load_manifest_string(manifest_text(nlohmann::json::parse(header->settings.dump())), path + " (its header)");
  const BytesPerToken bytes = bytes_per_token(config);
  for (StepMetrics& step : curve.steps) {
    step.loss = step.loss / std::log(2.0) / bytes.train;
    if (step.val_loss) *step.val_loss = *step.val_loss / std::log(2.0) / bytes.validation;
  }
  fmt::print("{}: {:.3f} bytes per training token, {:.3f} per validation token\n", path, bytes.train, bytes.validation);
}

// File names, or the paths as given when two runs share a name (run-a/m.jsonl, run-b/m.jsonl).
std::vector<std::string> legend_labels(const std::vector<std::string>& paths) {
  std::vector<std::string> names;
  std::set<std::string> distinct;
  for (const auto& path : paths) {
    names.push_back(std::filesystem::path(path).filename().string());
    distinct.insert(names.back());
  }
  return distinct.size() == names.size() ? names : paths;
}

// " (p2 t2 d2 v2)" from the log's header record, so that runs of one manifest under different
// layouts can be told apart; nothing for a log without a header.
std::string layout_label(const std::string& path) {
  const auto header = read_run_header(path);
  if (!header) return "";
  return fmt::format(" (p{} t{} d{} v{})", header->pipeline, header->tensor, header->data, header->virtual_stages);
}

void plot(const PlotOptions& options) {
  std::vector<LossCurve> curves;
  const auto labels = legend_labels(options.metrics);
  int64_t steps = 0;
  for (size_t i = 0; i < options.metrics.size(); ++i) {
    LossCurve curve{labels[i] + layout_label(options.metrics[i]), read_metrics_log(options.metrics[i])};
    if (curve.steps.empty()) throw Error(options.metrics[i] + ": no steps in the metrics log");
    if (options.bits_per_byte) to_bits_per_byte(curve, options.metrics[i]);
    steps += static_cast<int64_t>(curve.steps.size());
    curves.push_back(std::move(curve));
  }
  const std::string svg =
      options.bits_per_byte
          ? loss_curve_svg(curves, options.title.empty() ? "Bits per byte" : options.title, "bits per byte")
          : loss_curve_svg(curves, options.title.empty() ? "Training loss" : options.title);
  std::ofstream out(options.svg, std::ios::binary);
  if (!out || !out.write(svg.data(), static_cast<std::streamsize>(svg.size())) || !out.flush())
    throw Error(options.svg + ": cannot write the plot: " + std::strerror(errno));
  fmt::print("{}: {} run{}, {} steps\n", options.svg, curves.size(), curves.size() == 1 ? "" : "s", steps);
}

void add_plot_command(CLI::App& root) {
  auto options = std::make_shared<PlotOptions>();
  auto* command = root.add_subcommand("plot", "Draw the loss curves of metrics logs (run --metrics) as an SVG");
  command->add_option("METRICS", options->metrics, "Metrics logs (.jsonl), one curve each")->required();
  command->add_option("--svg", options->svg, "SVG file to write")->required();
  command->add_option("--title", options->title, "Title above the plot (default: Training loss, or Bits per byte)");
  command->add_flag("--bits-per-byte", options->bits_per_byte,
                    "Plot bits per byte of text instead of loss per token, so runs of different tokenizers compare");
  command->callback([options] {
    try {
      plot(*options);
    } catch (const Error& e) {
      std::cerr << e.what() << "\n";
      throw CLI::RuntimeError(2);
    }
  });
}

const RegisterHostCommand registration{{"plot", 70, add_plot_command}};

}  // namespace
}  // namespace ptdp::host
