#pragma once
// Training-loss curves of one or more runs as a standalone SVG document.
#include <string>
#include <vector>

#include "metrics/step_metrics.hpp"

namespace ptdp {

struct LossCurve {
  std::string label;               // legend text, e.g. the metrics file's name
  std::vector<StepMetrics> steps;  // in step order, as read_metrics_log returns them
};

// Loss against step on linear axes with ticks, one colour per curve, the steps' val_loss as
// dots in the curve's colour, a legend and the title. A non-finite loss leaves a gap in its
// curve. Each curve is one <path class="train-loss"> with one M or L command per drawn point;
// each validation point one <circle class="val-loss">.
// `y_label` names what the curves measure.
std::string loss_curve_svg(const std::vector<LossCurve>& curves, const std::string& title,
                           const std::string& y_label = "loss");

}  // namespace ptdp
