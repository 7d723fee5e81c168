#pragma once
#include <string>

namespace ptdp {
// "0.1.0"; the project version from CMake.
std::string version();
}  // namespace ptdp
