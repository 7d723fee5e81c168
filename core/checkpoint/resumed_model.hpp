#pragma once
// A resumed step must be of the model the manifest describes. Tensor shapes catch most other
// models, but not all: another model.heads splits the same weights into other heads, another
// layernorm_eps or vocab (with the same padded rows) changes what the same weights compute, and a
// run would train on, mixing steps of two models in one folder. Every step holds the resolved
// manifest it was saved with ("config"), so each model key that changes the function is compared
// before any rank starts. Dropout is a training setting, not part of the function, and the
// layout, precision, optimizer and schedule may change between runs.
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

// `step_metadata`: the step's metadata as saved; `where`: "checkpoint.dir D step N" (or
// checkpoint.resume_from). Throws ptdp::Error in one line naming the first key that differs, both
// values and the step; or naming what is damaged when the step's record of its model is not one.
// A step saved before steps held their manifest is let through: its shapes are still checked.
void check_resumed_model(const RunConfig& config, const nlohmann::json& step_metadata, const std::string& where);

}  // namespace ptdp
