#include "metrics/plot_axis.hpp"

#include <algorithm>
#include <cmath>

namespace ptdp {

double round_tick(double span) {
  const double raw = span / 6;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double ratio = raw / magnitude;
  return (ratio < 1.5 ? 1 : ratio < 3 ? 2 : ratio < 7 ? 5 : 10) * magnitude;
}

int tick_decimals(double tick) { return std::max(0, -static_cast<int>(std::floor(std::log10(tick) + 1e-9))); }

Axis padded_axis(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = std::max(std::abs(lo) * 0.1, 0.1);
    lo -= pad, hi += pad;
  }
  const double tick = round_tick(hi - lo), margin = 0.04 * (hi - lo);
  return {lo - margin, hi + margin, tick, tick_decimals(tick)};
}

std::vector<double> ticks(const Axis& axis) {
  std::vector<double> values;
  for (double i = std::ceil(axis.lo / axis.tick - 1e-9);; ++i) {
    const double value = i * axis.tick;
    if (value > axis.hi + axis.tick * 1e-6) break;
    values.push_back(std::abs(value) < axis.tick * 1e-6 ? 0.0 : value);
  }
  return values;
}

}  // namespace ptdp
