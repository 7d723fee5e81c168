#pragma once
// A (p, t, d, v, scatter/gather, recomputation) layout as `ptdp-host run --set` overrides.
#include <fmt/format.h>

#include <ostream>
#include <string>
#include <vector>

namespace ptdp::test {

struct Layout {
  int p, t, d, v;
  bool scatter_gather;
  bool recompute;
  std::string name() const {
    return fmt::format("p{}_t{}_d{}_v{}{}{}", p, t, d, v, scatter_gather ? "_sg" : "", recompute ? "_recompute" : "");
  }
  std::vector<std::string> sets() const {
    std::vector<std::string> s = {
        "parallel.pipeline=" + std::to_string(p), "parallel.tensor=" + std::to_string(t),
        "parallel.data=" + std::to_string(d), "parallel.virtual_stages=" + std::to_string(v),
        std::string("parallel.scatter_gather=") + (scatter_gather ? "true" : "false"),
        std::string("parallel.recompute=") + (recompute ? "\"full\"" : "\"none\"")};
    if (v > 1) s.push_back("plugins.scheduler=\"sched-interleaved\"");
    return s;
  }
  int ranks() const { return p * t * d; }
};

inline void PrintTo(const Layout& layout, std::ostream* os) { *os << layout.name(); }

}  // namespace ptdp::test
