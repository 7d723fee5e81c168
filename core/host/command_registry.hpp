#pragma once
// Subcommands of ptdp-host register themselves from their own files, so adding one touches
// nothing else. A command signals its exit status by throwing CLI::RuntimeError(code).
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ptdp::host {

struct HostCommand {
  std::string name;
  int order;                                // position in --help
  std::function<void(CLI::App& root)> add;  // adds the subcommand and its callback
};

std::vector<HostCommand>& host_commands();

struct RegisterHostCommand {
  explicit RegisterHostCommand(HostCommand command) { host_commands().push_back(std::move(command)); }
};

}  // namespace ptdp::host
