#include "version.hpp"

namespace ptdp {
std::string version() { return PTDP_VERSION; }
}  // namespace ptdp
