#pragma once
// A few lines saying what a validated manifest will run: layout, batch, model size, plugins and
// the loader's notes, as `ptdp-host validate` prints them.
#include <string>

#include "manifest/run_config.hpp"

namespace ptdp::host {

std::string describe_run(const RunConfig& config);

}  // namespace ptdp::host
