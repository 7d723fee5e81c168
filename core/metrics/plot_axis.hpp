#pragma once
// Linear plot axes with round tick spacing, shared by the SVG pictures of metrics (loss curves,
// A/B step-time distributions).
#include <vector>

namespace ptdp {

// An axis with ticks at multiples of a round spacing (1, 2 or 5 times a power of ten).
struct Axis {
  double lo, hi, tick;
  int decimals;  // enough to tell ticks apart

  double to_pixel(double value, double pixel_lo, double pixel_hi) const {
    return pixel_lo + (value - lo) / (hi - lo) * (pixel_hi - pixel_lo);
  }
};

// About six ticks over `span`.
double round_tick(double span);
int tick_decimals(double tick);

// An axis over [lo, hi] whose ends sit a little beyond the data, so that nothing drawn runs
// along the frame; a single value gets a range around it.
Axis padded_axis(double lo, double hi);

// The tick values inside the axis.
std::vector<double> ticks(const Axis& axis);

}  // namespace ptdp
