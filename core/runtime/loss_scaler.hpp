#pragma once
// Dynamic loss scaling for precision.params = "fp16" (docs/precision.md), as Megatron-LM's
// DynamicGradScaler. The head's backward multiplies the loss by the scale S, so gradients small
// enough to flush to zero in fp16 stay representable; Adam divides S out again
// (AdamStep::loss_scale). A step whose gradient norm is not finite overflowed fp16 at S: it is
// skipped (the kernels update nothing) and counted.
//
// - The scale is halved at the `hysteresis`-th overflowing step in a row, and at every further
//   one of the same run of overflows; a clean step starts the count again. Each overflowing step
//   is skipped whether or not it halves the scale.
// - After `window` clean steps in a row (counted since the last overflow or doubling) the scale
//   doubles, up to the largest float.
// - A halving that would take the scale below `min` is not made: the caller stops the run
//   (update() says so), since the gradients then overflow at every scale the run allows.
//
// The state is the same on every rank (every rank sees the same global norm), and a checkpoint
// keeps it, so a resumed run scales as the uninterrupted one would.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "manifest/run_config.hpp"

namespace ptdp {

struct LossScaleState {
  double scale = 65536;
  int64_t clean_steps = 0;         // clean steps in a row since the last overflow or doubling
  int64_t overflows_in_a_row = 0;  // overflowing steps since the last clean one
  int64_t skipped_steps = 0;       // steps skipped since the run (and the runs it resumed) began
  bool operator==(const LossScaleState&) const = default;
};

// What one step did to the scale.
struct LossScaleUpdate {
  bool skipped = false;         // the step's gradients overflowed: it updated nothing
  double scale_before = 0;      // the scale the step's gradients were computed with
  double scale_after = 0;       // the scale of the next step
  bool below_minimum = false;   // a halving was due but would go below the minimum: stop
};

class LossScaler {
 public:
  // From precision.loss_scale_initial, _window, _min and _hysteresis.
  explicit LossScaler(const RunConfig::Precision& precision);

  // The scale the next step's loss is multiplied by.
  float scale() const { return static_cast<float>(state_.scale); }
  // After a step: `overflow` when its gradient norm was not finite.
  LossScaleUpdate update(bool overflow);

  const LossScaleState& state() const { return state_; }
  void restore(const LossScaleState& state) { state_ = state; }

 private:
  LossScaleState state_;
  int64_t window_, hysteresis_;
  double min_;
};

// The log line of a skipped step ("step 7: gradient overflow at loss scale 65536; step skipped,
// loss scale now 32768"), or the error that stops the run when the scale reached its minimum
// (naming precision.loss_scale_min); `step` is 1-based.
std::string overflow_line(int64_t step, const LossScaleUpdate& update, int64_t hysteresis);
std::string below_minimum_error(int64_t step, const LossScaleUpdate& update, double min);

// The state as a checkpoint's metadata holds it ("loss_scale"), and back; a record that is not
// such an object is an Error naming `where`.
nlohmann::json loss_scale_json(const LossScaleState& state);
LossScaleState loss_scale_from_json(const nlohmann::json& record, const std::string& where);

}  // namespace ptdp
