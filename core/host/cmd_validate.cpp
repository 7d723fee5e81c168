// ptdp-host validate MANIFEST [--set key=value]...: checks a manifest, its plugins and its schedule,
// its data and its checkpoint folder, as a run does before its ranks start, and says what it
// describes. Exit status 0 when valid, 2 with the one-line reason when not.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/checkpoint_preflight.hpp"
#include "command_registry.hpp"
#include "data/run_data.hpp"
#include "data/run_tokenizer.hpp"
#include "launch/rank_environment.hpp"
#include "manifest/manifest_loader.hpp"
#include "run_summary.hpp"
#include "manifest_plugins.hpp"

namespace ptdp::host {

namespace {

// The data as a run reads them before its ranks start: every file opened and every token checked.
std::string checked_data(const RunConfig& config) {
  const RunData data = RunData::open(config);
  run_tokenizer(config, data);
  int64_t files = 0, tokens = 0;
  for (const SamplerSource& source : data.train) {
    files += static_cast<int64_t>(source.corpus.files().size());
    tokens += source.corpus.size();
  }
  if (data.validation) {
    files += static_cast<int64_t>(data.validation->files().size());
    tokens += data.validation->size();
  }
  return fmt::format("data         {} file{}, {} tokens read: every token fits model.vocab and its file's tokenizer",
                     files, files == 1 ? "" : "s", tokens);
}

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
                "Check the manifest alone, not its plugins, schedule, data and checkpoint folder: for planning a "
                "job on a machine that lacks them (a GPU job on a CPU machine)");
  cmd->callback([options] {
    try {
      // Under torchrun, mpirun or srun, validate judges the world those started, as run does.
      std::optional<LaunchedWorld> launched;
      if (const auto env = detect_rank_environment(); env && env->launcher != "ptdp")
        launched = LaunchedWorld{env->launcher, env->world_size};
      const RunConfig config = load_manifest(options->manifest, options->overrides, launched);
      std::vector<std::string> checked;
      if (!options->manifest_only) {
        checked = check_manifest_plugins(config);
        checked.push_back(checked_data(config));
        prepare_checkpoint_folder(config, CheckpointFolderUse::Validate);
        if (!config.checkpoint.dir.empty())
          checked.push_back(fmt::format("checkpoint   {} can be written, and what it resumes is this model",
                                        config.checkpoint.dir));
      }
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
