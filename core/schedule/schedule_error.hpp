#pragma once
// The error of a schedule that must not run: a scheduler's ops that miss or repeat work, an
// instruction stream that would deadlock or mismatch its peer. The message names the stage, the op
// and the reason, on one line.
#include "ptdp/error.hpp"

namespace ptdp {

class ScheduleError : public Error {
 public:
  using Error::Error;
};

}  // namespace ptdp
