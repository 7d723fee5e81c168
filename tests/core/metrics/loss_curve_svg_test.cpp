// The loss-curve SVG: one path per run with a point per finite loss, validation dots, legend,
// axes, and the points placed by their values.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "metrics/loss_curve_svg.hpp"

namespace ptdp {
namespace {

struct Point {
  double x, y;
  bool starts_segment;  // an M, not an L
};

// The points of every <path class="train-loss">, one vector per path, and their strokes.
struct Paths {
  std::vector<std::vector<Point>> points;
  std::vector<std::string> strokes;
};

Paths train_loss_paths(const std::string& svg) {
  Paths paths;
  static const std::regex path_element(R"re(<path class="train-loss" d="([^"]*)"[^>]* stroke="([^"]*)")re");
  static const std::regex command(R"re(([ML])(-?[0-9.]+) (-?[0-9.]+))re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), path_element), end; it != end; ++it) {
    const std::string d = (*it)[1];
    paths.strokes.push_back((*it)[2]);
    auto& points = paths.points.emplace_back();
    for (std::sregex_iterator c(d.begin(), d.end(), command); c != end; ++c)
      points.push_back({std::stod((*c)[2]), std::stod((*c)[3]), (*c)[1] == "M"});
  }
  return paths;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

LossCurve curve(const std::string& label, const std::vector<double>& losses, int64_t first_step = 1) {
  LossCurve c{label, {}};
  for (size_t i = 0; i < losses.size(); ++i) {
    StepMetrics m;
    m.step = first_step + static_cast<int64_t>(i);
    m.loss = losses[i];
    c.steps.push_back(m);
  }
  return c;
}

TEST(LossCurveSvg, OnePathPerRunWithAPointPerStep) {
  LossCurve a = curve("a.jsonl", {5.5, 4.8, 4.1, 3.5, 3.0});
  LossCurve b = curve("b.jsonl", {5.0, 4.0, 2.0});
  const std::string svg = loss_curve_svg({a, b}, "Two runs");
  Paths paths = train_loss_paths(svg);
  ASSERT_EQ(paths.points.size(), 2u) << svg;
  EXPECT_EQ(paths.points[0].size(), 5u);
  EXPECT_EQ(paths.points[1].size(), 3u);
  EXPECT_NE(paths.strokes[0], paths.strokes[1]);
  for (const auto& points : paths.points) {
    EXPECT_TRUE(points.front().starts_segment);
    for (size_t i = 1; i < points.size(); ++i) {
      EXPECT_FALSE(points[i].starts_segment);
      EXPECT_GT(points[i].x, points[i - 1].x);  // steps go right
      EXPECT_GT(points[i].y, points[i - 1].y);  // falling loss goes down the page
    }
  }
  // The same step lines up across runs; the lowest loss of all sits lowest.
  EXPECT_DOUBLE_EQ(paths.points[0][2].x, paths.points[1][2].x);
  EXPECT_GT(paths.points[1][2].y, paths.points[0][4].y);
  for (const auto& points : paths.points)
    for (const auto& p : points) {
      EXPECT_GE(p.x, 0);
      EXPECT_LE(p.x, 800);
      EXPECT_GE(p.y, 0);
      EXPECT_LE(p.y, 500);
    }
}

TEST(LossCurveSvg, TitleLegendAxisLabelsAndTicks) {
  LossCurve run = curve("gpt-tiny.jsonl", std::vector<double>(30, 0.0));
  for (size_t i = 0; i < 30; ++i) run.steps[i].loss = 5.5 - 3.5 * static_cast<double>(i) / 29;  // 5.5 to 2.0
  const std::string svg = loss_curve_svg({run}, "GPT tiny");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find(">GPT tiny</text>"), std::string::npos);
  EXPECT_NE(svg.find(">gpt-tiny.jsonl</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss</text>"), std::string::npos);
  // Round ticks: steps 1-30 on 0, 5, ... 30; losses 2.0-5.5 every 0.5.
  for (const char* tick : {">0</text>", ">5</text>", ">15</text>", ">30</text>", ">2.0</text>", ">3.5</text>",
                           ">5.5</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">35</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">6.0</text>"), std::string::npos);
  EXPECT_EQ(svg.find("validation loss"), std::string::npos);  // no validation points, no entry
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

TEST(LossCurveSvg, ValidationPointsAreDrawnAndNamedInTheLegend) {
  LossCurve run = curve("run.jsonl", {5.0, 4.0, 3.0, 2.5});
  run.steps[1].val_loss = 4.2;
  run.steps[3].val_loss = 2.7;
  const std::string svg = loss_curve_svg({run}, "t");
  EXPECT_EQ(count(svg, "<circle class=\"val-loss\""), 2u);
  EXPECT_NE(svg.find(">validation loss</text>"), std::string::npos);
  // A dot sits at its step, above the training point where the validation loss is higher.
  Paths paths = train_loss_paths(svg);
  ASSERT_EQ(paths.points.size(), 1u);
  std::smatch dot;
  ASSERT_TRUE(std::regex_search(svg, dot, std::regex(R"re(<circle class="val-loss" cx="([0-9.]+)" cy="([0-9.]+)")re")));
  EXPECT_DOUBLE_EQ(std::stod(dot[1]), paths.points[0][1].x);
  EXPECT_LT(std::stod(dot[2]), paths.points[0][1].y);
}

TEST(LossCurveSvg, NonFiniteLossLeavesAGap) {
  LossCurve run = curve("diverged.jsonl", {5.0, NAN, 4.0, 3.0, INFINITY});
  run.steps[2].val_loss = NAN;  // not drawn
  const std::string svg = loss_curve_svg({run}, "t");
  Paths paths = train_loss_paths(svg);
  ASSERT_EQ(paths.points.size(), 1u);
  ASSERT_EQ(paths.points[0].size(), 3u);
  EXPECT_TRUE(paths.points[0][0].starts_segment);
  EXPECT_TRUE(paths.points[0][1].starts_segment);  // after the gap
  EXPECT_FALSE(paths.points[0][2].starts_segment);
  EXPECT_EQ(svg.find("val-loss"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(LossCurveSvg, OneStepAndFlatLossStillGetAxes) {
  const std::string svg = loss_curve_svg({curve("one.jsonl", {3.0}, 7)}, "t");
  Paths paths = train_loss_paths(svg);
  ASSERT_EQ(paths.points.size(), 1u);
  ASSERT_EQ(paths.points[0].size(), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(svg.find(">7</text>"), std::string::npos);
  EXPECT_NE(svg.find(">3.0</text>"), std::string::npos);
}

TEST(LossCurveSvg, TextIsEscaped) {
  const std::string svg = loss_curve_svg({curve("a<b>&\"c\".jsonl", {1.0, 0.5})}, "loss & <friends>");
  EXPECT_NE(svg.find(">a&lt;b&gt;&amp;&quot;c&quot;.jsonl</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss &amp; &lt;friends&gt;</text>"), std::string::npos);
}

}  // namespace
}  // namespace ptdp
