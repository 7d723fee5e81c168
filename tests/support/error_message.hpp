#pragma once
// The message of the ptdp::Error a call throws, for tests of refusals.
#include <string>

#include "ptdp/error.hpp"

namespace ptdp::test {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ptdp::test
