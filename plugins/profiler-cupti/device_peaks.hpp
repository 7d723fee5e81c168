#pragma once
// Datasheet peaks of the GPUs whose figures are known here, by the name CUDA reports.
#include <string>

namespace ptdp::cupti {

struct DatasheetPeaks {
  double bf16_tflops = 0;  // dense tensor-core bf16
  double memory_gbs = 0;
};

// {0, 0} for a device not in the table.
DatasheetPeaks datasheet_peaks(const std::string& device_name);

}  // namespace ptdp::cupti
