#pragma once
// A RunConfig as JSON, every key resolved (defaults filled, overrides applied, paths absolute,
// the padded vocabulary and ffn_hidden computed), in the manifest's own table and key names.
// A checkpoint stores it, so the step says exactly what model and run made it, on its own,
// without the manifest file it came from.
#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

nlohmann::json run_config_json(const RunConfig& config);

}  // namespace ptdp
