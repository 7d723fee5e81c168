#pragma once
// What the suites of every scheduler plugin check: the plugin loads as the host loads it, and a
// schedule it serves passes the core's verifier and has exactly the paper's bubble under uniform
// op times.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"
#include "schedule/op_label.hpp"
#include "schedule/pipeline_schedule.hpp"
#include "schedule/schedule_simulator.hpp"

namespace ptdp::testing {

// By name from the build's plugin folder, or by path.
inline std::shared_ptr<Scheduler> load_scheduler(const std::string& name_or_path) {
  static PluginRegistry registry({PTDP_TEST_PLUGIN_DIR});
  return create_plugin<Scheduler>(registry.load(name_or_path, PluginKind::Scheduler, "scheduler"), toml::table{});
}

inline std::string shape_text(const ScheduleShape& shape) {
  return "p=" + std::to_string(shape.stages) + " v=" + std::to_string(shape.chunks) +
         " m=" + std::to_string(shape.microbatches);
}

// Every forward takes t_f, every backward t_b; the bubble must not depend on their ratio.
inline const std::vector<SimulationOptions> kUniformTimes = {{1.0, 2.0, 0.0}, {1.0, 1.0, 0.0}, {2.0, 3.0, 0.0},
                                                             {3.0, 1.0, 0.0}};

// The schedule is verified and its simulated bubble equals (p - 1)/(v·m) under every uniform
// timing; `peaks` receives the peak activations per stage.
inline ::testing::AssertionResult verified_with_paper_bubble(const Scheduler& scheduler, const ScheduleShape& shape,
                                                            std::vector<int>* peaks = nullptr) {
  try {
    const PipelineSchedule plan = plan_schedule(scheduler, shape);
    const double formula = formula_bubble_fraction(shape);
    for (const SimulationOptions& times : kUniformTimes) {
      const double bubble = simulate_schedule(shape, plan.streams, times).bubble_fraction;
      if (std::abs(bubble - formula) > 1e-9)
        return ::testing::AssertionFailure() << shape_text(shape) << " t_f=" << times.t_forward
                                             << " t_b=" << times.t_backward << ": bubble " << bubble
                                             << ", the paper's formula gives " << formula;
    }
    if (peaks) *peaks = plan.report.peak_activations;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << shape_text(shape) << ": " << e.what();
  }
}

// The scheduler's refusal of `shape` for `stage`, or "" when it serves it.
inline std::string refusal(const Scheduler& scheduler, const ScheduleShape& shape, int stage = 0) {
  try {
    scheduler.stage_ops(shape, stage);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

// "F0 F1 B0 ..." as ptdp-host schedule prints a stage.
inline std::string ops_text(const std::vector<ComputeOp>& ops, int chunks) {
  std::string text;
  for (const ComputeOp& op : ops) {
    if (!text.empty()) text += ' ';
    text += op_label(op, chunks);
  }
  return text;
}

}  // namespace ptdp::testing
