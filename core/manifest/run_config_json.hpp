#pragma once
// A RunConfig as JSON, every key as the loader resolved it (defaults filled in, --set applied,
// paths made absolute): what a run really ran with, for the metrics header, A/B reports and the
// checkpoint, which stores it so that a step says on its own what model and run made it.
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// One object per manifest table ("run", "model", "parallel", ...), keyed as in docs/manifest.md.
// `source` and the loader's notes and warnings are left out: they say where a run came from, not what it ran.
nlohmann::ordered_json run_config_json(const RunConfig& config);

// The manifest text run_config_json() describes (derived values such as padded_vocab left out),
// so a stored configuration is read back through the same loader and checks as a file.
std::string manifest_text(const nlohmann::json& resolved);

}  // namespace ptdp
