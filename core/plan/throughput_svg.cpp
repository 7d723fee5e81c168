#include "plan/throughput_svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "svg_text.hpp"

namespace ptdp {
namespace {

constexpr double kLeft = 90, kTop = 64, kCell = 64, kMargin = 40;

// White to the loss curves' blue, by the best step time over the cell's: the ranking's own measure,
// so the darkest cell is the best. (TFLOP/s counts the recomputed forward, and shading by it made
// a recomputing layout look better than a faster one without.)
std::string shade(double share) {
  const auto mix = [&](int from, int to) { return static_cast<int>(from + (to - from) * share); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(255, 0x1f), mix(255, 0x77), mix(255, 0xb4));
}

}  // namespace

std::string throughput_svg(const PlanResult& result, const std::string& title) {
  // The fastest fitting candidate of each (p, t); candidates are ranked, so the first seen wins.
  std::map<std::pair<int, int>, const PlanCandidate*> fastest;
  std::set<int> pipelines, tensors;
  for (const PlanCandidate& c : result.candidates) {
    const std::pair<int, int> shape{c.layout.pipeline, c.layout.tensor};
    pipelines.insert(shape.first), tensors.insert(shape.second);
    auto& slot = fastest[shape];
    if (!slot || (!slot->fits && c.fits)) slot = &c;
  }
  double fastest_step = 0;
  for (const auto& [shape, c] : fastest)
    if (c->fits && c->timed && (fastest_step == 0 || c->time.total() < fastest_step)) fastest_step = c->time.total();

  const double width = kLeft + kCell * static_cast<double>(pipelines.size()) + kMargin;
  const double height = kTop + kCell * static_cast<double>(tensors.size()) + 56;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{2}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n"
      "<text x=\"{2}\" y=\"44\" text-anchor=\"middle\" font-size=\"12\" fill=\"#444\">predicted step time of "
      "the fastest layout that fits (darker is faster), by pipeline stages p and tensor-parallel size t</text>\n"
      "<text class=\"axis-label\" x=\"{4}\" y=\"{5}\" text-anchor=\"middle\" font-size=\"13\">p</text>\n"
      "<text class=\"axis-label\" x=\"24\" y=\"{6}\" text-anchor=\"middle\" font-size=\"13\">t</text>\n",
      width, height, width / 2, xml_escaped(title), kLeft + kCell * static_cast<double>(pipelines.size()) / 2,
      height - 10, kTop + kCell * static_cast<double>(tensors.size()) / 2);
  const PlanCandidate* best = result.best();
  int column = 0;
  for (int p : pipelines) {
    const double x = kLeft + kCell * column++;
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\" font-size=\"12\">{}</text>\n",
                       x + kCell / 2, kTop + kCell * static_cast<double>(tensors.size()) + 18, p);
    int row = 0;
    for (int t : tensors) {
      const double y = kTop + kCell * row++;
      if (column == 1)
        svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\" font-size=\"12\">{}</text>\n",
                           kLeft - 8, y + kCell / 2 + 4, t);
      auto it = fastest.find({p, t});
      if (it == fastest.end()) continue;  // the rules allow no layout with this (p, t)
      const PlanCandidate& c = *it->second;
      const bool is_best = best && best->layout == c.layout;
      const bool shown = c.fits && c.timed && fastest_step > 0;
      const double step = shown ? c.time.total() : 0;
      const double share = shown ? fastest_step / step : 0;
      const std::string tooltip =
          shown ? fmt::format("{}: {:.3g} s a step, {:.0f} TFLOP/s per GPU", layout_label(c.layout), step,
                              c.tflops_per_gpu)
                : layout_label(c.layout);
      svg += fmt::format("<rect class=\"cell{}\" x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" "
                         "fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\" data-step-s=\"{:.6g}\"><title>{}</title></rect>\n",
                         is_best ? " best" : "", x + 1, y + 1, kCell - 2, kCell - 2, shown ? shade(share) : "#eeeeee",
                         is_best ? "#d62728" : "#ffffff", is_best ? 3 : 1, step, xml_escaped(tooltip));
      svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\" font-size=\"12\" fill=\"{}\">{}</text>\n",
                         x + kCell / 2, y + kCell / 2 + 4, share > 0.6 ? "#fff" : "#222",
                         shown ? fmt::format("{:.3g} s", step) : "no fit");
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ptdp
