#include "metrics/metrics_log.hpp"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ptdp/error.hpp"

namespace ptdp {

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_) throw Error(path + ": cannot open the metrics log: " + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const StepMetrics& metrics) {
  nlohmann::ordered_json line = {
      {"step", metrics.step},
      {"loss", metrics.loss},
      {"grad_norm", metrics.grad_norm},
      {"lr", metrics.lr},
      {"tokens_per_s", metrics.tokens_per_s},
      {"tflops_per_gpu", metrics.tflops_per_gpu},
      {"step_time_s", metrics.step_time_s},
      {"elapsed_s", metrics.elapsed_s},
  };
  if (metrics.val_loss) line["val_loss"] = *metrics.val_loss;
  if (metrics.loss_scale) {
    line["loss_scale"] = *metrics.loss_scale;
    line["skipped"] = metrics.skipped;
  }
  write_line(line.dump());
}

void MetricsLog::write_header(const RunHeader& header) { write_line(run_header_json(header).dump()); }

void MetricsLog::write_line(const std::string& json) {
  const std::string text = json + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw Error(path_ + ": cannot write the metrics log: " + std::strerror(errno));
}

}  // namespace ptdp
