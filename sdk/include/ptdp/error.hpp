#pragma once
// The one exception type that crosses the plugin boundary. Plugins and the host share a
// toolchain (checked by the registry through the descriptor's fingerprint), so a C++ exception
// thrown inside a plugin is caught by the host unchanged.
#include <stdexcept>
#include <string>

namespace ptdp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ptdp

// Checks a condition that depends on input or on another component, throwing ptdp::Error with
// the message and where it was detected.
#define PTDP_STRINGIFY_DETAIL(x) #x
#define PTDP_STRINGIFY(x) PTDP_STRINGIFY_DETAIL(x)
#define PTDP_CHECK(cond, msg)                                                             \
  do {                                                                                    \
    if (!(cond))                                                                          \
      throw ::ptdp::Error(std::string(msg) + " [" __FILE__ ":" PTDP_STRINGIFY(__LINE__) "]"); \
  } while (0)
