#include "runtime/loss_scaler.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include <ptdp/error.hpp>

namespace ptdp {

LossScaler::LossScaler(const RunConfig::Precision& precision)
    : window_(precision.loss_scale_window), hysteresis_(precision.loss_scale_hysteresis),
      min_(precision.loss_scale_min) {
  // The kernels multiply by the float; the state holds exactly that value.
  state_.scale = static_cast<float>(precision.loss_scale_initial);
}

LossScaleUpdate LossScaler::update(bool overflow) {
  LossScaleUpdate u;
  u.skipped = overflow;
  u.scale_before = state_.scale;
  if (overflow) {
    state_.clean_steps = 0;
    ++state_.skipped_steps;
    if (++state_.overflows_in_a_row >= hysteresis_) {
      const double halved = state_.scale / 2;
      if (halved < min_) u.below_minimum = true;  // left as it is: the run stops
      else state_.scale = halved;
    }
  } else {
    state_.overflows_in_a_row = 0;
    if (++state_.clean_steps >= window_) {
      state_.clean_steps = 0;
      if (state_.scale * 2 <= std::numeric_limits<float>::max()) state_.scale *= 2;
    }
  }
  u.scale_after = state_.scale;
  return u;
}

std::string overflow_line(int64_t step, const LossScaleUpdate& update, int64_t hysteresis) {
  const std::string head = fmt::format("step {}: gradient overflow at loss scale {}; step skipped, ", step,
                                       update.scale_before);
  if (update.scale_after != update.scale_before) return head + fmt::format("loss scale now {}", update.scale_after);
  return head + fmt::format("loss scale kept until {} overflowing steps in a row (precision.loss_scale_hysteresis)",
                            hysteresis);
}

std::string below_minimum_error(int64_t step, const LossScaleUpdate& update, double min) {
  return fmt::format("step {}: gradient overflow at loss scale {}, and halving it would go below "
                     "precision.loss_scale_min ({}); stopping, with the weights as the last step that updated them "
                     "left them",
                     step, update.scale_before, min);
}

nlohmann::json loss_scale_json(const LossScaleState& state) {
  return {{"scale", state.scale}, {"clean_steps", state.clean_steps},
          {"overflows_in_a_row", state.overflows_in_a_row}, {"skipped_steps", state.skipped_steps}};
}

LossScaleState loss_scale_from_json(const nlohmann::json& record, const std::string& where) {
  auto refuse = [&](const std::string& why) { return Error(fmt::format("{}: the loss scale record {}", where, why)); };
  if (!record.is_object()) throw refuse("is not an object");
  auto count = [&](const char* key) {
    const auto found = record.find(key);
    if (found == record.end() || !found->is_number_integer() || found->get<int64_t>() < 0)
      throw refuse(fmt::format("lacks a count '{}'", key));
    return found->get<int64_t>();
  };
  LossScaleState state;
  const auto scale = record.find("scale");
  if (scale == record.end() || !scale->is_number() || !std::isfinite(scale->get<double>()) ||
      scale->get<double>() <= 0)
    throw refuse("lacks a positive finite 'scale'");
  state.scale = scale->get<double>();
  state.clean_steps = count("clean_steps");
  state.overflows_in_a_row = count("overflows_in_a_row");
  state.skipped_steps = count("skipped_steps");
  return state;
}

}  // namespace ptdp
