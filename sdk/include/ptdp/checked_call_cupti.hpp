#pragma once
// CUPTI's results for checked_call.hpp.
#include <cupti_result.h>

#include <string>

#include "ptdp/checked_call.hpp"

namespace ptdp {

template <>
struct CallStatus<CUptiResult> {
  static constexpr const char* library = "CUPTI";
  static bool ok(CUptiResult result) { return result == CUPTI_SUCCESS; }
  static bool ok_at_teardown(CUptiResult result) { return ok(result); }
  static std::string reason(CUptiResult result) {
    const char* text = nullptr;
    if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text)
      return "result " + std::to_string(static_cast<int>(result));
    return text;
  }
};

}  // namespace ptdp
