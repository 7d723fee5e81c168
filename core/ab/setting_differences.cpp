#include "ab/setting_differences.hpp"

#include <map>

namespace ptdp {

namespace {

void flatten(const nlohmann::json& value, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, child] : value.items()) flatten(child, prefix.empty() ? key : prefix + "." + key, out);
    return;
  }
  out[prefix] = value.dump();
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

bool changes_training(const std::string& key) {
  // The global batch is the optimizer's batch; everything else in [parallel] splits the same
  // batch over ranks and microbatches differently.
  if (key == "parallel.global_batch") return true;
  for (const char* how : {"parallel.", "plugins.", "launch.", "checkpoint.", "precision."})
    if (starts_with(key, how)) return false;
  // Logging and held-out evaluation do not touch the training steps; data.val_fraction does
  // (it decides which tokens are training data).
  for (const char* aside : {"run.name", "run.log_every", "data.val_every", "data.val_batches"})
    if (key == aside) return false;
  return true;
}

bool changes_rounding(const std::string& key) { return starts_with(key, "precision.fp8"); }

std::vector<SettingDifference> setting_differences(const nlohmann::json& baseline, const nlohmann::json& arm) {
  std::map<std::string, std::string> a, b;
  flatten(baseline, "", a);
  flatten(arm, "", b);
  std::map<std::string, std::pair<std::string, std::string>> keys;
  for (const auto& [key, value] : a) keys[key] = {value, "(absent)"};
  for (const auto& [key, value] : b) {
    auto [it, inserted] = keys.try_emplace(key, "(absent)", value);
    if (!inserted) it->second.second = value;
  }
  std::vector<SettingDifference> differences;
  for (const auto& [key, values] : keys)
    if (values.first != values.second)
      differences.push_back({key, values.first, values.second, changes_training(key), changes_rounding(key)});
  return differences;
}

}  // namespace ptdp
