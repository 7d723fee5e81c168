#include "command_registry.hpp"

namespace ptdp::host {

std::vector<HostCommand>& host_commands() {
  static std::vector<HostCommand> commands;
  return commands;
}

}  // namespace ptdp::host
