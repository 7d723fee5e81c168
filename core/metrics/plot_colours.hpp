#pragma once
// The colours of the metrics pictures, so that an arm or a run keeps its colour from one
// picture to the next.
#include <cstddef>
#include <iterator>

namespace ptdp {

// Tableau 10: distinct from one another and readable on white.
inline constexpr const char* kPlotColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

inline const char* plot_colour(size_t index) { return kPlotColours[index % std::size(kPlotColours)]; }

}  // namespace ptdp
