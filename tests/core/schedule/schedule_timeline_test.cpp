#include <gtest/gtest.h>

#include <regex>

#include "schedule/instruction_stream.hpp"
#include "schedule/schedule_timeline.hpp"
#include "test_schedules.hpp"

namespace ptdp {
namespace {

using namespace ptdp::testing;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string render(const std::string& name, const ScheduleShape& shape, const StageOps& ops) {
  const SimulationOptions options{1.0, 2.0, 0.0};
  return render_timeline_svg(shape, options, simulate_schedule(shape, lower_schedule(shape, ops), options),
                             {name});
}

TEST(ScheduleTimelineSvg, DrawsEveryOpWithItsMicrobatchTitleAxisAndLegend) {
  const std::string svg = render("sched-test", {2, 1, 2}, one_f_one_b_ops(2, 2));
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("sched-test: p = 2, v = 1, m = 2"), std::string::npos);
  EXPECT_NE(svg.find("bubble 0.5 (paper: (p\u22121)/m = 0.5)"), std::string::npos);
  EXPECT_NE(svg.find(">stage 0<"), std::string::npos);
  EXPECT_NE(svg.find(">stage 1<"), std::string::npos);
  // One box with a tooltip per op; forwards and backwards in two colours.
  EXPECT_EQ(count(svg, "<title>"), 8u);
  EXPECT_NE(svg.find("<title>B1: backward of microbatch 1, chunk 0 (virtual stage 1), 5\u20137 ms</title>"),
            std::string::npos);
  EXPECT_EQ(count(svg, "fill=\"#1f5fa8\" stroke=\"#ffffff\""), 4u);
  EXPECT_EQ(count(svg, "fill=\"#288750\" stroke=\"#ffffff\""), 4u);
  EXPECT_NE(svg.find(">time (ms)<"), std::string::npos);
  EXPECT_NE(svg.find(">forward<"), std::string::npos);
  EXPECT_NE(svg.find(">backward<"), std::string::npos);
  EXPECT_NE(svg.find(">idle (bubble)<"), std::string::npos);
  EXPECT_EQ(count(svg, "<g>"), count(svg, "</g>"));
}

TEST(ScheduleTimelineSvg, ShadesChunksAndEscapesNames) {
  const ScheduleShape shape{1, 2, 1};
  const std::string svg = render("a<b&\"c\"", shape, {{F(0, 0), F(0, 1), B(0, 1), B(0, 0)}});
  EXPECT_NE(svg.find("a&lt;b&amp;&quot;c&quot;: p = 1, v = 2, m = 1"), std::string::npos);
  EXPECT_NE(svg.find("(p\u22121)/(v\u00b7m)"), std::string::npos);
  for (const char* entry : {">forward, chunk 0<", ">forward, chunk 1<", ">backward, chunk 0<", ">backward, chunk 1<"})
    EXPECT_NE(svg.find(entry), std::string::npos) << entry;
  // Chunk 1 is a lighter shade of the same colour than chunk 0.
  EXPECT_EQ(count(svg, "fill=\"#1f5fa8\" stroke=\"#ffffff\""), 1u);
  EXPECT_EQ(count(svg, "fill=\"#aac2de\" stroke=\"#ffffff\""), 1u);
  EXPECT_FALSE(std::regex_search(svg, std::regex("&(?!amp;|lt;|gt;|quot;)")));
}

}  // namespace
}  // namespace ptdp
