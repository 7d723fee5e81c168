// ptdp-host validate MANIFEST [--set key=value]...: checks a manifest, its plugins and its schedule
// and says what it describes. Exit status 0 when valid, 2 with the one-line reason when not.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command_registry.hpp"
#include "manifest/manifest_loader.hpp"
#include "manifest/run_summary.hpp"
#include "manifest_plugins.hpp"

namespace ptdp::host {

namespace {

void add_validate(CLI::App& root) {
  struct Options {
    std::string manifest;
    std::vector<std::string> overrides;
    bool manifest_only = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = root.add_subcommand(
      "validate", "Check a manifest (every key, type, range and cross-field rule) and print what it runs");
  cmd->add_option("MANIFEST", options->manifest, "Manifest file (TOML), see docs/manifest.md")->required();
  cmd->add_option("--set", options->overrides,
                  "Override a key: key.path=value, read as a TOML value (4, true, \"full\"); "
                  "a bare word is a string. Repeatable")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  cmd->add_flag("--manifest-only", options->manifest_only,
                "Check the manifest alone, not its plugins and schedule: for planning a job on a machine "
                "that lacks its plugins (a GPU job on a CPU machine)");
  cmd->callback([options] {
    try {
      const RunConfig config = load_manifest(options->manifest, options->overrides);
      const std::vector<std::string> checked =
          options->manifest_only ? std::vector<std::string>{} : check_manifest_plugins(config);
      std::cout << describe_run(config);
      for (const std::string& line : checked) std::cout << line << "\n";
    } catch (const Error& e) {
      std::cerr << e.what() << "\n";
      throw CLI::RuntimeError(kExitInvalidManifest);
    }
  });
}

const RegisterHostCommand registration({"validate", 20, add_validate});

}  // namespace

}  // namespace ptdp::host
