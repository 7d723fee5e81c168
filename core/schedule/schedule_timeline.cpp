#include "schedule/schedule_timeline.hpp"
#include "svg_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ptdp/error.hpp"
#include "schedule/op_label.hpp"
#include "schedule/schedule_shape.hpp"

namespace ptdp {
namespace {

struct Rgb {
  double r, g, b;
};

Rgb mix(Rgb a, Rgb b, double t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

std::string hex(Rgb c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)),
                static_cast<int>(std::lround(c.g)), static_cast<int>(std::lround(c.b)));
  return buffer;
}

bool is_light(Rgb c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b > 150.0; }

// Forwards blue and backwards green as in the paper's figures, a split backward's weight
// gradients (W) orange as in the zero-bubble paper's; higher chunks in lighter shades.
Rgb op_colour(OpKind kind, int chunk, int chunks) {
  const Rgb base = kind == OpKind::Forward          ? Rgb{31, 95, 168}
                   : kind == OpKind::BackwardWeight ? Rgb{214, 120, 20}
                                                    : Rgb{40, 135, 80};
  const double lighten = chunks > 1 ? 0.62 * chunk / (chunks - 1) : 0.0;
  return mix(base, Rgb{255, 255, 255}, lighten);
}

const Rgb kIdle{236, 238, 242};

std::string number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6f", x);
  std::string s = buffer;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// 1, 2 or 5 times a power of ten, so that about `ticks` ticks cover `range`.
double tick_step(double range, int ticks) {
  const double raw = range / ticks, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10.0 * power;
}

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
  return "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" " + attributes + ">" + xml_escaped(content) + "</text>\n";
}

std::string rect(double x, double y, double w, double h, Rgb fill, const std::string& extra = "") {
  return "<rect x=\"" + number(x) + "\" y=\"" + number(y) + "\" width=\"" + number(w) + "\" height=\"" + number(h) +
         "\" fill=\"" + hex(fill) + "\"" + extra + "/>";
}

}  // namespace

std::string render_timeline_svg(const ScheduleShape& shape, const SimulationOptions& options,
                                const SimulationResult& result, const TimelineLabels& labels) {
  const int p = shape.stages, v = shape.chunks;
  PTDP_CHECK(static_cast<int>(result.timelines.size()) == p, "timeline drawing: the simulation has " +
                                                                 std::to_string(result.timelines.size()) +
                                                                 " stages, the shape " + std::to_string(p));
  const std::string unit = labels.time_unit.empty() ? "" : " " + labels.time_unit;
  const double makespan = std::max(result.makespan, 1e-12);
  bool split = false;  // a split backward: the picture shows its W boxes
  for (const auto& timeline : result.timelines)
    for (const TimedOp& t : timeline) split = split || t.op.kind == OpKind::BackwardWeight;
  const double shortest_op =
      std::min({options.t_forward, options.t_backward, split ? options.weight_time() : options.t_backward,
                split ? options.t_backward - options.weight_time() : options.t_backward}) / v;
  // Wide enough for a two-digit number in the shortest box, within a readable page width.
  const double scale = std::min(std::max(900.0 / makespan, 24.0 / shortest_op), 2400.0 / makespan);
  const double left = 86, right = 28, top = 96, row_h = 30, row_gap = 10;
  const double chart_w = makespan * scale, chart_h = p * row_h + (p - 1) * row_gap;
  const double axis_y = top + chart_h + 10;

  const std::string title =
      labels.scheduler + ": p = " + std::to_string(p) + ", v = " + std::to_string(v) + ", m = " +
      std::to_string(shape.microbatches) + "  \u2014  bubble " + number(result.bubble_fraction) + (split ? " (1F1B's " : " (paper: ") +
      (v > 1 ? "(p\u22121)/(v\u00b7m)" : "(p\u22121)/m") + " = " + number(formula_bubble_fraction(shape)) + ")";
  const std::string times = "t_f = " + number(options.t_forward) + unit + ", t_b = " + number(options.t_backward) +
                            unit + (split ? " (of it t_w = " + number(options.weight_time()) + unit + ")" : "") +
                            " per microbatch through a whole stage" +
                            (v > 1 ? " (a chunk takes 1/v of it)" : "") + "; transfer latency " +
                            number(options.transfer_latency) + unit +
                            (options.transfers_posted_ahead ? ", transfers posted ahead." : ".");
  const std::string reading = "Makespan " + number(result.makespan) + unit + ", ideal m\u00b7(t_f + t_b) = " +
                              number(result.ideal) + unit + ". Boxes show microbatch indices (from 0)" +
                              (v > 1 ? "; lighter shades are later chunks." : ".");
  // Text widths estimated from the font size (about 0.6 em per character).
  const double text_w = std::max({10.5 * title.size(), 7.6 * times.size(), 7.6 * reading.size()});
  const double width = left + std::max(chart_w, text_w) + right;

  std::string body;
  body += text(left, 30, title, "font-size=\"18\" font-weight=\"bold\"");
  body += text(left, 54, times, "font-size=\"13\" fill=\"#444\"");
  body += text(left, 72, reading, "font-size=\"13\" fill=\"#444\"");

  // One row per stage: idle background, then a box per op.
  for (int s = 0; s < p; ++s) {
    const double y = top + s * (row_h + row_gap);
    body += text(left - 10, y + row_h / 2 + 5, "stage " + std::to_string(s), "font-size=\"14\" text-anchor=\"end\"");
    body += rect(left, y, chart_w, row_h, kIdle) + "\n";
    for (const TimedOp& t : result.timelines[s]) {
      const double x = left + t.start * scale, w = (t.end - t.start) * scale;
      const Rgb fill = op_colour(t.op.kind, t.op.chunk, v);
      body += "<g>" + rect(x, y, w, row_h, fill, " stroke=\"#ffffff\" stroke-width=\"1\"");
      body += "<title>" +
              xml_escaped(op_label(t.op, v) + ": " + op_kind_category(t.op.kind) +
                     " of microbatch " + std::to_string(t.op.microbatch) + ", chunk " + std::to_string(t.op.chunk) +
                     " (virtual stage " + std::to_string(virtual_stage_of(shape, s, t.op.chunk)) + "), " +
                     number(t.start) + "\u2013" + number(t.end) + unit) +
              "</title>";
      const std::string label = std::to_string(t.op.microbatch);
      const double font = std::min(13.0, 1.5 * w / static_cast<double>(label.size() + 1));
      if (font >= 6.0)
        body += text(x + w / 2, y + row_h / 2 + font * 0.36, label,
                     "font-size=\"" + number(font) + "\" text-anchor=\"middle\" fill=\"" +
                         std::string(is_light(fill) ? "#1a1a1a" : "#ffffff") + "\"");
      body += "</g>\n";
    }
  }

  // Time axis.
  body += "<line x1=\"" + number(left) + "\" y1=\"" + number(axis_y) + "\" x2=\"" + number(left + chart_w) +
          "\" y2=\"" + number(axis_y) + "\" stroke=\"#333\"/>\n";
  const double step = tick_step(makespan, std::max(4, static_cast<int>(chart_w / 90)));
  for (double t = 0; t <= makespan + step * 1e-9; t += step) {
    const double x = left + t * scale;
    body += "<line x1=\"" + number(x) + "\" y1=\"" + number(axis_y) + "\" x2=\"" + number(x) + "\" y2=\"" +
            number(axis_y + 5) + "\" stroke=\"#333\"/>\n";
    body += text(x, axis_y + 19, number(t), "font-size=\"12\" text-anchor=\"middle\"");
  }
  body += text(left + chart_w / 2, axis_y + 38, "time" + (unit.empty() ? "" : " (" + labels.time_unit + ")"),
               "font-size=\"13\" text-anchor=\"middle\"");

  // Legend, wrapped to the picture's width.
  struct Entry {
    Rgb colour;
    std::string name;
  };
  std::vector<Entry> entries;
  std::vector<OpKind> kinds{OpKind::Forward, OpKind::Backward};
  if (split) kinds.push_back(OpKind::BackwardWeight);
  for (OpKind kind : kinds)
    for (int c = 0; c < v; ++c)
      entries.push_back({op_colour(kind, c, v),
                         std::string(kind == OpKind::BackwardWeight ? "weight gradients (W)"
                                     : split && kind == OpKind::Backward ? "input gradient (B)"
                                                                         : op_kind_category(kind)) +
                             (v > 1 ? ", chunk " + std::to_string(c) : "")});
  entries.push_back({kIdle, "idle (bubble)"});
  double x = left, y = axis_y + 58;
  for (const Entry& e : entries) {
    const double item_w = 40 + 7.8 * e.name.size();
    if (x + item_w > width - right && x > left) {
      x = left;
      y += 22;
    }
    body += rect(x, y, 14, 14, e.colour, " stroke=\"#888\" stroke-width=\"0.5\"") + "\n";
    body += text(x + 20, y + 12, e.name, "font-size=\"13\"");
    x += item_w;
  }
  const double height = y + 28;

  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" + number(height) +
         "\" viewBox=\"0 0 " + number(width) + " " + number(height) +
         "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n" + rect(0, 0, width, height, {255, 255, 255}) +
         "\n" + body + "</svg>\n";
}

void add_timeline_to_trace(ChromeTrace& trace, int pid, const ScheduleShape& shape, const SimulationResult& result,
                           const TimelineLabels& labels) {
  PTDP_CHECK(static_cast<int>(result.timelines.size()) == shape.stages,
             "timeline trace: the simulation has " + std::to_string(result.timelines.size()) +
                 " stages, the shape " + std::to_string(shape.stages));
  trace.set_process_name(pid, labels.scheduler + " p=" + std::to_string(shape.stages) + " v=" +
                                std::to_string(shape.chunks) + " m=" + std::to_string(shape.microbatches) +
                                " (simulated)");
  for (int s = 0; s < shape.stages; ++s) {
    trace.set_thread_name(pid, s, "stage " + std::to_string(s));
    for (const TimedOp& t : result.timelines[s])
      trace.add_span(op_label(t.op, shape.chunks), op_kind_category(t.op.kind), pid, s,
                     t.start * labels.microseconds_per_unit, (t.end - t.start) * labels.microseconds_per_unit,
                     {{"microbatch", int64_t{t.op.microbatch}},
                      {"chunk", int64_t{t.op.chunk}},
                      {"virtual_stage", int64_t{virtual_stage_of(shape, s, t.op.chunk)}}});
  }
}

}  // namespace ptdp
