#pragma once
// Reads a TOML manifest (docs/manifest.md) into a validated RunConfig. Every problem is reported
// as one ManifestError whose message starts with where it is: `file:line:col: key.path: reason`,
// or `--set key.path=value: key.path: reason` when a command-line override is to blame.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "manifest/run_config.hpp"
#include "manifest/world_size.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

class ManifestError : public Error {
 public:
  using Error::Error;
};

// `overrides` are `key.path=value` strings (ptdp-host's --set), applied in order on top of the
// file. The value is read as a TOML value (4, true, "full", [1, 2]); a bare word that is not
// valid TOML is taken as a string. Relative paths resolve against the manifest's folder.
// `launched`: the world of the external launcher that started this process, if one did.
RunConfig load_manifest(const std::string& path, const std::vector<std::string>& overrides = {},
                        const std::optional<LaunchedWorld>& launched = std::nullopt);

// The same for manifest text in memory; `source_name` is used in messages, and relative paths
// resolve against the current directory.
RunConfig load_manifest_string(std::string_view text, const std::string& source_name,
                               const std::vector<std::string>& overrides = {},
                               const std::optional<LaunchedWorld>& launched = std::nullopt);

// The parts of loading that other TOML inputs (cluster files) share, so their errors read alike:
// the file's text, or ManifestError "PATH: cannot read WHAT: reason"; the parsed document, or
// ManifestError "SOURCE:LINE:COL: reason".
std::string read_config_file(const std::string& path, const std::string& what);
toml::table parse_config_text(std::string_view text, const std::string& source);

}  // namespace ptdp
