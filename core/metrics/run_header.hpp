#pragma once
// The first record of a metrics log: which run wrote the steps that follow (ptdp version, the
// manifest and every setting as resolved, each plugin's file, version and toolchain, the layout,
// the device). Two logs can then be compared knowing what differed between them (ptdp-host ab),
// and a log found later still says what produced it.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "manifest/run_config.hpp"
#include "plugin/plugin_registry.hpp"
#include "ptdp/tensor.hpp"

namespace ptdp {

struct PluginRecord {
  std::string slot;  // manifest slot: communicator, kernels, scheduler, checkpoint
  std::string name, version, toolchain;
  std::string path;  // canonical path of the shared object
};

struct RunHeader {
  std::string ptdp_version;
  std::string manifest;       // the manifest's path as given
  std::string manifest_hash;  // "fnv1a64:<16 hex digits>" of the manifest file's bytes
  nlohmann::ordered_json settings;  // run_config_json(): every key as resolved
  // activation_choices_json(): one layer's activations under each recomputation choice, with and
  // without sequence parallelism, and which this run made (written, not read back)
  nlohmann::ordered_json activation_memory;
  std::vector<PluginRecord> plugins;
  int pipeline = 1, tensor = 1, data = 1, virtual_stages = 1, microbatches = 1, world_size = 1;
  std::string device;  // rank 0's: "cpu" or "cuda:<index>"
  std::string host;    // rank 0's host name
};

// The header of the run `config` describes, with the plugins it loaded through `registry`
// (asking again returns the already loaded files) and rank 0's device.
// peak_activations: the microbatch-chunks each pipeline stage keeps at its peak (the verified
// schedule's), for the activation memory per stage.
RunHeader make_run_header(const RunConfig& config, PluginRegistry& registry, const Device& device,
                          const std::vector<int>& peak_activations);

// {"record": "header", ...}: a line of a metrics log that is a header, not a step.
nlohmann::ordered_json run_header_json(const RunHeader& header);
bool is_run_header(const nlohmann::json& line);

// The first header of a metrics log; empty when the log has none (one written before headers
// existed). Throws ptdp::Error "<path>: <reason>" when it cannot be read and
// "<path>:<line>: <reason>" for a header with a missing or mistyped field.
std::optional<RunHeader> read_run_header(const std::string& path);

}  // namespace ptdp
