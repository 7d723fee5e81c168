#pragma once
// Reads back the .jsonl log that MetricsLog writes, for plots and reports.
#include <cstddef>
#include <string>
#include <vector>

#include "metrics/step_metrics.hpp"

namespace ptdp {

// The steps of a metrics log, in step order. step and loss are required on every line; the
// other fields may be missing. A null value (written for a non-finite one) reads as NaN; a null
// val_loss is a validation pass whose loss was NaN. loss_scale and skipped are read where an fp16
// run wrote them (steps_skipped, which the log does not hold, stays 0). A step logged twice keeps its later line: a
// run resumed from a checkpoint logs again the steps after it. Blank lines and the run's header
// records (metrics/run_header.hpp; read_run_header reads them) are skipped. A last line that has
// no newline and is not such an object is what a run killed mid-write or a full disk leaves: it
// is skipped with a warning. Throws ptdp::Error "<path>: <reason>" when the file cannot be read
// and "<path>:<line>: <reason>" for any other line that is not such an object, or longer than a
// metrics line can be.
std::vector<StepMetrics> read_metrics_log(const std::string& path);

// A metrics line is a few hundred bytes; a longer one means the file is not a metrics log.
inline constexpr size_t kMaxMetricsLineBytes = 1 << 20;

}  // namespace ptdp
