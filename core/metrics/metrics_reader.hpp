#pragma once
// Reads back the .jsonl log that MetricsLog writes, for plots and reports.
#include <string>
#include <vector>

#include "metrics/step_metrics.hpp"

namespace ptdp {

// The steps of a metrics log, in step order. step and loss are required on every line; the
// other fields may be missing. A null value (written for a non-finite one) reads as NaN; a null
// val_loss is a validation pass whose loss was NaN. A step logged twice keeps its later line: a
// run resumed from a checkpoint logs again the steps after it. Blank lines and the run's header
// records (metrics/run_header.hpp; read_run_header reads them) are skipped.
// Throws ptdp::Error "<path>: <reason>" when the file cannot be read and
// "<path>:<line>: <reason>" for a line that is not such an object.
std::vector<StepMetrics> read_metrics_log(const std::string& path);

}  // namespace ptdp
