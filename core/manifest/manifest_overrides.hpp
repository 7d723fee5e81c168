#pragma once
// `--set key.path=value`: one command-line change to a parsed manifest.
#include <string>

#include <toml++/toml.h>

namespace ptdp {

// Sets (creating or replacing) the key in `root` and returns its dotted path. The value is read
// as a TOML value (=4, =true, ="full", =[1, 2]); text that is not one TOML value is a string.
// Throws ManifestError naming the assignment when it has no '=', a malformed key path, or a path
// that goes through a key which is not a table. Whether the key is known is for the loader.
std::string apply_override(toml::table& root, const std::string& assignment);

}  // namespace ptdp
