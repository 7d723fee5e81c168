#pragma once
// The rules that tie manifest keys together (docs/architecture.md §1), and the values derived from them.
#include "manifest/manifest_locator.hpp"
#include "manifest/run_config.hpp"

namespace ptdp {

// Fills the derived fields (model.ffn_hidden when unset, model.padded_vocab, notes) and throws
// ManifestError at the key a broken rule is reported on. Expects every field in its own range, and
// parallel.data settled against the world (manifest/world_size.hpp).
void apply_manifest_rules(RunConfig& config, const ManifestLocator& locator);

}  // namespace ptdp
