#include "plan/throughput_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "svg_text.hpp"

namespace ptdp {
namespace {

constexpr double kWidth = 800, kHeight = 460;
constexpr double kLeft = 72, kRight = kWidth - 24, kTop = 48, kBottom = kHeight - 72;

}  // namespace

std::string throughput_svg(const PlanResult& result, const std::string& title) {
  // The fastest fitting candidate of each (p, t); candidates are ranked, so the first seen wins.
  std::map<std::pair<int, int>, const PlanCandidate*> fastest;
  for (const PlanCandidate& c : result.candidates) {
    auto& slot = fastest[{c.layout.pipeline, c.layout.tensor}];
    if (!slot || (!slot->fits && c.fits)) slot = &c;
  }
  double top = 1;
  for (const auto& [shape, c] : fastest)
    if (c->fits) top = std::max(top, c->tflops_per_gpu);
  top *= 1.15;

  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"30\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">{3}</text>\n"
      "<rect x=\"{4}\" y=\"{5}\" width=\"{6}\" height=\"{7}\" fill=\"none\" stroke=\"#444\"/>\n"
      "<text class=\"axis-label\" x=\"{2}\" y=\"{8}\" text-anchor=\"middle\" font-size=\"14\">(p, t): pipeline "
      "stages, tensor-parallel size</text>\n"
      "<text class=\"axis-label\" x=\"20\" y=\"{9}\" text-anchor=\"middle\" font-size=\"14\" "
      "transform=\"rotate(-90 20 {9})\">predicted TFLOP/s per GPU</text>\n",
      kWidth, kHeight, (kLeft + kRight) / 2, xml_escaped(title), kLeft, kTop, kRight - kLeft, kBottom - kTop,
      kHeight - 16, (kTop + kBottom) / 2);
  const double slot_width = (kRight - kLeft) / std::max<size_t>(1, fastest.size());
  const PlanCandidate* best = result.best();
  size_t i = 0;
  for (const auto& [shape, c] : fastest) {
    const double x = kLeft + slot_width * static_cast<double>(i++), centre = x + slot_width / 2;
    svg += fmt::format("<text class=\"shape\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"12\">({}, "
                       "{})</text>\n",
                       centre, kBottom + 18, shape.first, shape.second);
    if (!c->fits) {
      svg += fmt::format("<text class=\"no-fit\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\" "
                         "fill=\"#888\">does not fit</text>\n",
                         centre, kBottom - 8);
      continue;
    }
    const double height = c->tflops_per_gpu / top * (kBottom - kTop);
    const bool is_best = best && best->layout.pipeline == shape.first && best->layout.tensor == shape.second;
    svg += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                       "fill=\"{}\"><title>{}</title></rect>\n",
                       x + slot_width * 0.15, kBottom - height, slot_width * 0.7, height,
                       is_best ? "#d62728" : "#1f77b4", xml_escaped(layout_label(c->layout)));
    svg += fmt::format("<text class=\"value\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"11\">"
                       "{:.0f}</text>\n",
                       centre, kBottom - height - 4, c->tflops_per_gpu);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ptdp
