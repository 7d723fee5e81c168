#include "schedule/trace_op_costs.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "ptdp/error.hpp"
#include "ptdp/message_text.hpp"
#include "schedule/op_label.hpp"

namespace ptdp {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

SimulationOptions op_costs_from_trace(const std::string& path, int chunks, SimulationOptions base) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read the trace");
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not a JSON trace: " + json_reason(e.what()));
  }
  const nlohmann::json& events = trace.is_object() ? trace.value("traceEvents", nlohmann::json::array()) : trace;
  std::map<std::string, std::vector<double>> durations;  // category -> span lengths in us
  for (const nlohmann::json& event : events)
    if (event.is_object() && event.value("ph", "") == "X" && event.contains("dur") && event["dur"].is_number())
      durations[event.value("cat", "")].push_back(event["dur"].get<double>());
  auto spans = [&](OpKind kind) -> const std::vector<double>& { return durations[op_kind_category(kind)]; };
  const double to_stage_ms = chunks / 1000.0;
  if (spans(OpKind::Forward).empty())
    throw Error(path + ": the trace has no forward spans (write one with ptdp-host run --trace)");
  base.t_forward = median(spans(OpKind::Forward)) * to_stage_ms;
  if (!spans(OpKind::BackwardInput).empty() && !spans(OpKind::BackwardWeight).empty()) {
    const double weight = median(spans(OpKind::BackwardWeight)) * to_stage_ms;
    base.t_backward = median(spans(OpKind::BackwardInput)) * to_stage_ms + weight;
    // Kernels that do not split the backward leave W spans of almost nothing: T_W near 0, as it
    // is, not the simulator's default of half (which 0 asks for).
    base.t_weight = std::max(weight, base.t_backward * 1e-9);
  } else if (!spans(OpKind::Backward).empty()) {
    base.t_backward = median(spans(OpKind::Backward)) * to_stage_ms;
    base.t_weight = 0.0;
  } else {
    throw Error(path + ": the trace has no backward spans (write one with ptdp-host run --trace)");
  }
  return base;
}

}  // namespace ptdp
