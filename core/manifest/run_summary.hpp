#pragma once
// A few lines saying what a validated manifest will run: layout, batch, model size, plugins and
// the loader's notes. Printed by `ptdp-host validate` and at the start of a run.
#include <string>

#include "manifest/run_config.hpp"

namespace ptdp {

std::string describe_run(const RunConfig& config);

}  // namespace ptdp
