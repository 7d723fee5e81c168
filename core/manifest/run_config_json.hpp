#pragma once
// A RunConfig as JSON, every key as the loader resolved it (defaults filled in, --set applied,
// paths made absolute): what a run really ran with, for the metrics header and A/B reports.
#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// One object per manifest table ("run", "model", "parallel", ...), keyed as in docs/manifest.md.
// `source` and the loader's notes are left out: they say where a run came from, not what it ran.
nlohmann::ordered_json run_config_json(const RunConfig& config);

}  // namespace ptdp
