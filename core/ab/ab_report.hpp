#pragma once
// The files an A/B leaves in its output folder: report.json (every raw sample and every derived
// number, for tools), report.md (the tables a person reads), report.svg (ab_report_svg.hpp), and
// each arm's schedule-<arm>.svg (arm_schedule_picture.hpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ab/ab_analysis.hpp"

namespace ptdp {

// What the report says about how it came about.
struct AbContext {
  std::string command;  // the ptdp-host ab command line
  std::string date;     // UTC, ISO 8601
  std::string launcher; // empty: local jobs
  int steps = 0;        // per job; 0: each manifest's run.steps
  std::vector<std::vector<std::string>> order;  // arm names, one list per round
  std::vector<std::string> schedule_pictures;   // per arm, its schedule-<arm>.svg (arm_schedule_picture.hpp)
};

nlohmann::ordered_json ab_report_json(const AbAnalysis& analysis, const AbMethod& method, const AbContext& context);
std::string ab_report_markdown(const AbAnalysis& analysis, const AbMethod& method, const AbContext& context);

// Writes `text` to `path` whole; throws ptdp::Error "<path>: cannot write ...: <reason>".
void write_report_file(const std::string& path, const std::string& text);

}  // namespace ptdp
