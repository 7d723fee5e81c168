#pragma once
// A command-line check CLI11 lacks: a number that is finite. Its ranges compare, and NaN compares
// false with everything, so `--temperature nan` would pass CLI::Range; infinities would pass a
// positive check.
#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

namespace ptdp::host {

inline const CLI::Validator& finite_number() {
  static const CLI::Validator check(
      [](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return "Value " + text + " is not a number";
        if (!std::isfinite(value)) return "Value " + text + " must be a finite number";
        return "";
      },
      "FINITE");
  return check;
}

}  // namespace ptdp::host
