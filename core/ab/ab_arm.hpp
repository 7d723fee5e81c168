#pragma once
// An arm of an A/B comparison: a manifest and the --set overrides that make it what it is.
#include <string>
#include <vector>

#include "manifest/run_config.hpp"

namespace ptdp {

struct AbArm {
  std::string name;  // names the arm's files in the output folder
  std::string manifest;
  std::vector<std::string> sets;  // every --set of the arm, the ones for all arms first
};

// Loads the arm's manifest with its overrides and checks what would otherwise fail only once the
// arm runs: the training data, each plugin (found, loadable, of its slot's kind, its options
// valid against its schema) and the schedule the scheduler makes for the layout (verified).
// `multi_node`: the arms start through a launcher template, so launch.nnodes > 1 is allowed.
// Throws ptdp::Error "arm '<name>': <reason>".
RunConfig validate_arm(const AbArm& arm, bool multi_node);

// An empty string when `name` can name an arm; otherwise why not.
std::string arm_name_problem(const std::string& name);

}  // namespace ptdp
