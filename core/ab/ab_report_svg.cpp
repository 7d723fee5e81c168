#include "ab/ab_report_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ab/step_time_statistics.hpp"
#include "metrics/loss_curve_svg.hpp"
#include "metrics/plot_axis.hpp"
#include "metrics/plot_colours.hpp"
#include "svg_text.hpp"

namespace ptdp {

namespace {

constexpr double kWidth = 800, kLeft = 150, kRight = kWidth - 24, kTop = 48, kRowHeight = 56;

// Spreads the dots of one row vertically, the same way every time the report is drawn.
double jitter(size_t index) { return std::fmod(static_cast<double>(index) * 0.6180339887, 1.0) - 0.5; }

std::string distribution_panel(const AbAnalysis& analysis, int warmup, double height) {
  const double bottom = height - 48;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  std::vector<std::vector<double>> samples_ms;
  for (const auto& arm : analysis.arms) {
    std::vector<double> ms;
    for (double s : pooled(step_time_samples(arm.rounds, warmup))) ms.push_back(s * 1e3);
    for (double v : ms) lo = std::min(lo, v), hi = std::max(hi, v);
    samples_ms.push_back(std::move(ms));
  }
  if (lo > hi) lo = hi = 0;
  const Axis x = padded_axis(lo, hi);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\">\n"
      "<text class=\"title\" x=\"{2}\" y=\"30\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">"
      "Step time per arm (after warm-up)</text>\n",
      kWidth, height, (kLeft + kRight) / 2);
  svg += "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double v : ticks(x))
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", x.to_pixel(v, kLeft, kRight),
                       kTop, bottom);
  svg += "</g>\n";
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft, kTop,
                     kRight - kLeft, bottom - kTop);
  svg += "<g class=\"ticks\" font-size=\"12\" fill=\"#333\">\n";
  for (double v : ticks(x))
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}</text>\n",
                       x.to_pixel(v, kLeft, kRight), bottom + 18, v, x.decimals);
  svg += "</g>\n";
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\">"
                     "step time (ms)</text>\n",
                     (kLeft + kRight) / 2, height - 12);
  for (size_t i = 0; i < analysis.arms.size(); ++i) {
    const auto& ms = samples_ms[i];
    const double mid = kTop + kRowHeight * (static_cast<double>(i) + 0.5);
    const char* colour = plot_colour(i);
    svg += fmt::format("<g class=\"arm\" data-arm=\"{0}\">\n<text x=\"{1}\" y=\"{2:.1f}\" text-anchor=\"end\" "
                       "font-size=\"13\">{0}</text>\n",
                       xml_escaped(analysis.arms[i].arm.name), kLeft - 10, mid + 4);
    if (!ms.empty()) {
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      const double q1 = x.to_pixel(quantile(sorted, 0.25), kLeft, kRight);
      const double q3 = x.to_pixel(quantile(sorted, 0.75), kLeft, kRight);
      svg += fmt::format("<rect class=\"quartiles\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                         "fill=\"{}\" fill-opacity=\"0.15\" stroke=\"{}\"/>\n",
                         q1, mid - kRowHeight * 0.35, std::max(q3 - q1, 1.0), kRowHeight * 0.7, colour, colour);
      const double m = x.to_pixel(quantile(sorted, 0.5), kLeft, kRight);
      svg += fmt::format("<line class=\"median\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                         "stroke=\"{3}\" stroke-width=\"3\"/>\n",
                         m, mid - kRowHeight * 0.4, mid + kRowHeight * 0.4, colour);
    }
    for (size_t k = 0; k < ms.size(); ++k)
      svg += fmt::format("<circle class=\"sample\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" "
                         "fill-opacity=\"0.6\"/>\n",
                         x.to_pixel(ms[k], kLeft, kRight), mid + jitter(k) * kRowHeight * 0.6, colour);
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

// loss_curve_svg's document, placed below the distributions as a nested picture.
std::string loss_panel(const AbAnalysis& analysis, double y) {
  std::vector<LossCurve> curves;
  for (const auto& arm : analysis.arms) curves.push_back({arm.arm.name, arm.rounds.front().steps});
  std::string svg = loss_curve_svg(curves, "Training loss per arm (round 1)");
  svg.erase(0, svg.find("<svg"));
  return svg.replace(0, 4, fmt::format("<svg x=\"0\" y=\"{}\"", y));
}

}  // namespace

std::string ab_report_svg(const AbAnalysis& analysis, int warmup) {
  const double top_height = kTop + kRowHeight * static_cast<double>(analysis.arms.size()) + 48;
  constexpr double kLossHeight = 500;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
      kWidth, top_height + kLossHeight);
  svg += distribution_panel(analysis, warmup, top_height);
  svg += loss_panel(analysis, top_height);
  return svg + "</svg>\n";
}

}  // namespace ptdp
