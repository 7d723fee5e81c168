#include "device_peaks.hpp"

namespace ptdp::cupti {

DatasheetPeaks datasheet_peaks(const std::string& name) {
  auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
  // The SXM parts; the PCIe and NVL variants run lower clocks and power and are left unknown.
  if (has("H200") && !has("NVL")) return {989.4, 4800};
  if (has("H100") && (has("SXM") || has("HBM3")) && !has("NVL")) return {989.4, 3350};
  if (has("A100-SXM4-80GB")) return {312, 2039};
  if (has("A100-SXM4-40GB")) return {312, 1555};
  return {};
}

}  // namespace ptdp::cupti
