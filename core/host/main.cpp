// ptdp-host: runs training and the tools around it. Subcommands live in cmd_*.cpp.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>

#include "command_registry.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");
  CLI::App app{"ptdp-host: train transformers with pipeline, tensor and data parallelism"};
  app.set_version_flag("--version", "ptdp " + ptdp::version());
  app.require_subcommand(1);
  auto& commands = ptdp::host::host_commands();
  std::sort(commands.begin(), commands.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  for (auto& command : commands) command.add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
