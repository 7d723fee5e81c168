#pragma once
// MetricsLog: one JSON object per step in a .jsonl file, flushed line by line so that a crashed or
// killed run keeps every step it finished and the file can be followed while training runs.
#include <cstdio>
#include <string>

#include "metrics/run_header.hpp"
#include "metrics/step_metrics.hpp"

namespace ptdp {

class MetricsLog {
 public:
  // append: keep the lines already there (a run resumed from a checkpoint); otherwise start
  // the file afresh. Throws ptdp::Error "<path>: <reason>" when it cannot be opened.
  explicit MetricsLog(const std::string& path, bool append = false);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Fields: step, loss, grad_norm, lr, tokens_per_s, tflops_per_gpu, step_time_s, elapsed_s and,
  // when present, val_loss, and loss_scale and skipped (fp16). A non-finite value (a diverged
  // loss, the gradient norm of a skipped step) is written as null.
  void write(const StepMetrics& metrics);
  // The run's header record (metrics/run_header.hpp); written before the first step, and again
  // when a resumed run appends, since the resumed run may differ (another layout, say).
  void write_header(const RunHeader& header);

  const std::string& path() const { return path_; }

 private:
  void write_line(const std::string& json);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace ptdp
