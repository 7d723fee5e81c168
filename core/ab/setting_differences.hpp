#pragma once
// Which resolved settings two arms differ in, and whether the difference changes what is trained
// (the model, the data, the optimizer, the seed) or only how (layout, schedule, communicator,
// kernels, recomputation, scatter/gather, precision): the latter must give the same losses,
// within rounding, by the invariant every layout is held to.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ptdp {

struct SettingDifference {
  std::string key;             // dotted: "parallel.recompute"
  std::string baseline, arm;   // JSON text of each value; "(absent)" where one has no such key
  bool changes_training = false;
  // The same model trained in other number formats (the FP8 recipe): its losses differ by
  // design, so an A/B reports how far apart they are instead of whether they agree.
  bool changes_rounding = false;
};

// Whether a setting (dotted key) changes the number formats the model is trained in.
bool changes_rounding(const std::string& key);

// `baseline` and `arm` are run_config_json() objects.
std::vector<SettingDifference> setting_differences(const nlohmann::json& baseline, const nlohmann::json& arm);

// True for keys whose value shapes the trained model or its data; false for keys that choose
// only how the same training is carried out, logged or launched.
bool changes_training(const std::string& key);

}  // namespace ptdp
