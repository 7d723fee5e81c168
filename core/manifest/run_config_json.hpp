#pragma once
// A RunConfig as JSON, every key resolved (defaults filled, overrides applied, paths absolute,
// the padded vocabulary and ffn_hidden computed), in the manifest's own table and key names.
// A checkpoint stores it, so the step says exactly what model and run made it, on its own,
// without the manifest file it came from.
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

nlohmann::json run_config_json(const RunConfig& config);

// The manifest text run_config_json() describes (derived values such as padded_vocab left out),
// so a stored configuration is read back through the same loader and checks as a file.
std::string manifest_text(const nlohmann::json& resolved);

}  // namespace ptdp
