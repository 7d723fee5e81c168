#include "metrics/loss_curve_svg.hpp"
#include "metrics/plot_axis.hpp"
#include "metrics/plot_colours.hpp"
#include "svg_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ptdp {

namespace {

constexpr double kWidth = 800, kHeight = 500;
constexpr double kLeft = 72, kRight = kWidth - 24, kTop = 48, kBottom = kHeight - 56;

// Whole steps; the ends round out to ticks, so a run from step 1 starts at 0.
Axis step_axis(double lo, double hi) {
  if (!(hi > lo)) lo -= 1, hi += 1;
  const double tick = std::max(1.0, round_tick(hi - lo));
  return {std::floor(lo / tick + 1e-9) * tick, std::ceil(hi / tick - 1e-9) * tick, tick, 0};
}

// The ranges every curve's steps and finite losses (training and validation) cover.
struct DataRange {
  double step_lo = std::numeric_limits<double>::infinity(), step_hi = -step_lo;
  double loss_lo = step_lo, loss_hi = -step_lo;
};

DataRange data_range(const std::vector<LossCurve>& curves) {
  DataRange range;
  auto cover_loss = [&](double loss) {
    if (!std::isfinite(loss)) return;
    range.loss_lo = std::min(range.loss_lo, loss);
    range.loss_hi = std::max(range.loss_hi, loss);
  };
  for (const auto& curve : curves)
    for (const auto& step : curve.steps) {
      range.step_lo = std::min(range.step_lo, static_cast<double>(step.step));
      range.step_hi = std::max(range.step_hi, static_cast<double>(step.step));
      cover_loss(step.loss);
      if (step.val_loss) cover_loss(*step.val_loss);
    }
  if (range.step_lo > range.step_hi) range.step_lo = range.step_hi = 0;
  if (range.loss_lo > range.loss_hi) range.loss_lo = range.loss_hi = 0;
  return range;
}

void draw_axes(std::string& svg, const Axis& x, const Axis& y, const std::string& y_label) {
  svg += "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double v : ticks(x)) {
    double px = x.to_pixel(v, kLeft, kRight);
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px, kTop, kBottom);
  }
  for (double v : ticks(y)) {
    double py = y.to_pixel(v, kBottom, kTop);
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py, kLeft, kRight);
  }
  svg += "</g>\n";
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                     kTop, kRight - kLeft, kBottom - kTop);
  svg += "<g class=\"ticks\" font-size=\"12\" fill=\"#333\">\n";
  for (double v : ticks(x))
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.{}f}</text>\n",
                       x.to_pixel(v, kLeft, kRight), kBottom + 18, v, x.decimals);
  for (double v : ticks(y))
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.{}f}</text>\n", kLeft - 8,
                       y.to_pixel(v, kBottom, kTop) + 4, v, y.decimals);
  svg += "</g>\n";
  svg += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\">step</text>\n",
                     (kLeft + kRight) / 2, kHeight - 16);
  svg += fmt::format("<text class=\"axis-label\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" font-size=\"14\" "
                     "transform=\"rotate(-90 {0} {1})\">{2}</text>\n",
                     20, (kTop + kBottom) / 2, xml_escaped(y_label));
}

void draw_curve(std::string& svg, const LossCurve& curve, const char* colour, const Axis& x, const Axis& y) {
  std::string path;
  bool in_segment = false;
  for (const auto& step : curve.steps) {
    if (!std::isfinite(step.loss)) {
      in_segment = false;
      continue;
    }
    path += fmt::format("{}{:.1f} {:.1f} ", in_segment ? 'L' : 'M', x.to_pixel(static_cast<double>(step.step), kLeft, kRight),
                        y.to_pixel(step.loss, kBottom, kTop));
    in_segment = true;
  }
  if (!path.empty()) path.pop_back();
  // Round caps make a lone point (a segment of one step) show as a dot.
  svg += fmt::format("<path class=\"train-loss\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" "
                     "stroke-linejoin=\"round\" stroke-linecap=\"round\"/>\n",
                     path, colour);
  for (const auto& step : curve.steps) {
    if (!step.val_loss || !std::isfinite(*step.val_loss)) continue;
    svg += fmt::format("<circle class=\"val-loss\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" stroke=\"#fff\" "
                       "stroke-width=\"1.2\"/>\n",
                       x.to_pixel(static_cast<double>(step.step), kLeft, kRight), y.to_pixel(*step.val_loss, kBottom, kTop),
                       colour);
  }
}

void draw_legend(std::string& svg, const std::vector<LossCurve>& curves, const std::string& y_label) {
  bool any_validation = false;
  size_t longest = std::string("validation loss").size();
  for (const auto& curve : curves) {
    longest = std::max(longest, curve.label.size());
    for (const auto& step : curve.steps) any_validation |= step.val_loss && std::isfinite(*step.val_loss);
  }
  const size_t rows = curves.size() + (any_validation ? 1 : 0);
  const double row_height = 18, width = 44 + 7.0 * static_cast<double>(longest);
  const double left = kRight - 10 - width, top = kTop + 10;
  svg += fmt::format("<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" "
                     "height=\"{}\" fill=\"#fff\" fill-opacity=\"0.9\" stroke=\"#bbb\"/>\n",
                     left, top, width, row_height * static_cast<double>(rows) + 8);
  for (size_t i = 0; i < rows; ++i) {
    const double mid = top + 4 + row_height * (static_cast<double>(i) + 0.5);
    if (i < curves.size())
      svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
                         "stroke-width=\"2.5\"/>\n",
                         left + 8, mid, left + 30, plot_colour(i));
    else
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#666\"/>\n", left + 19, mid);
    const std::string text = i < curves.size() ? curves[i].label : "validation " + y_label;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left + 36, mid + 4, xml_escaped(text));
  }
  svg += "</g>\n";
}

}  // namespace

std::string loss_curve_svg(const std::vector<LossCurve>& curves, const std::string& title, const std::string& y_label) {
  const DataRange range = data_range(curves);
  const Axis x = step_axis(range.step_lo, range.step_hi);
  const Axis y = padded_axis(range.loss_lo, range.loss_hi);
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"30\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, (kLeft + kRight) / 2, xml_escaped(title));
  draw_axes(svg, x, y, y_label);
  for (size_t i = 0; i < curves.size(); ++i) draw_curve(svg, curves[i], plot_colour(i), x, y);
  draw_legend(svg, curves, y_label);
  svg += "</svg>\n";
  return svg;
}

}  // namespace ptdp
