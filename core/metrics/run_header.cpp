#include "metrics/run_header.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "manifest/run_config_json.hpp"
#include "plan/activation_choices.hpp"
#include "plugin/manifest_plugin_set.hpp"
#include "ptdp/error.hpp"
#include "version.hpp"

namespace ptdp {

namespace {

// Says whether two runs started from the same file; not a defence against anyone.
std::string manifest_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  uint64_t h = 1469598103934665603ull;
  for (auto it = std::istreambuf_iterator<char>(in); it != std::istreambuf_iterator<char>(); ++it)
    h = (h ^ static_cast<uint8_t>(*it)) * 1099511628211ull;
  return fmt::format("fnv1a64:{:016x}", h);
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? name : "";
}

}  // namespace

RunHeader make_run_header(const RunConfig& config, PluginRegistry& registry, const Device& device,
                          const std::vector<int>& peak_activations) {
  RunHeader header;
  header.ptdp_version = version();
  header.manifest = config.source;
  header.manifest_hash = manifest_hash(config.source);
  header.settings = run_config_json(config);
  header.activation_memory = activation_choices_json(config, peak_activations);
  // The checkpoint store is recorded only for runs that checkpoint.
  const ManifestPluginSet loaded = load_manifest_plugins(registry, config.plugins, !config.checkpoint.dir.empty());
  for (const SlotPlugin& p : loaded.loaded())
    header.plugins.push_back({p.slot->name, p.info->descriptor->name, p.info->descriptor->version,
                              p.info->descriptor->toolchain, p.info->path});
  header.pipeline = config.parallel.pipeline;
  header.tensor = config.parallel.tensor;
  header.data = config.parallel.data;
  header.virtual_stages = config.parallel.virtual_stages;
  header.microbatches = config.parallel.microbatches();
  header.world_size = config.parallel.world_size();
  header.device = device.kind == MemoryKind::Cuda ? fmt::format("cuda:{}", device.index) : "cpu";
  header.host = host_name();
  return header;
}

nlohmann::ordered_json run_header_json(const RunHeader& h) {
  nlohmann::ordered_json plugins = nlohmann::ordered_json::array();
  for (const auto& p : h.plugins)
    plugins.push_back(
        {{"slot", p.slot}, {"name", p.name}, {"version", p.version}, {"toolchain", p.toolchain}, {"path", p.path}});
  return {{"record", "header"},
          {"ptdp_version", h.ptdp_version},
          {"manifest", h.manifest},
          {"manifest_hash", h.manifest_hash},
          {"layout",
           {{"pipeline", h.pipeline}, {"tensor", h.tensor}, {"data", h.data}, {"virtual_stages", h.virtual_stages},
            {"microbatches", h.microbatches}, {"world_size", h.world_size}}},
          {"device", h.device},
          {"host", h.host},
          {"plugins", plugins},
          {"settings", h.settings},
          {"activation_memory", h.activation_memory}};
}

bool is_run_header(const nlohmann::json& line) {
  if (!line.is_object()) return false;
  auto record = line.find("record");
  return record != line.end() && *record == "header";
}

namespace {

// A header's reason for being rejected; the caller adds where.
struct HeaderError {
  std::string reason;
};

template <class T>
T field(const nlohmann::ordered_json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) throw HeaderError{std::string("header has no \"") + key + "\""};
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw HeaderError{std::string("header \"") + key + "\" is " + it->type_name()};
  }
}

// Read as ordered JSON, so that the settings keep the order they were written in.
RunHeader parse_header(const nlohmann::ordered_json& line) {
  RunHeader h;
  h.ptdp_version = field<std::string>(line, "ptdp_version");
  h.manifest = field<std::string>(line, "manifest");
  h.manifest_hash = field<std::string>(line, "manifest_hash");
  h.device = field<std::string>(line, "device");
  h.host = field<std::string>(line, "host");
  const auto layout = field<nlohmann::ordered_json>(line, "layout");
  h.pipeline = field<int>(layout, "pipeline");
  h.tensor = field<int>(layout, "tensor");
  h.data = field<int>(layout, "data");
  h.virtual_stages = field<int>(layout, "virtual_stages");
  h.microbatches = field<int>(layout, "microbatches");
  h.world_size = field<int>(layout, "world_size");
  for (const auto& p : field<nlohmann::ordered_json>(line, "plugins"))
    h.plugins.push_back({field<std::string>(p, "slot"), field<std::string>(p, "name"),
                         field<std::string>(p, "version"), field<std::string>(p, "toolchain"),
                         field<std::string>(p, "path")});
  h.settings = field<nlohmann::ordered_json>(line, "settings");
  if (!h.settings.is_object()) throw HeaderError{"header \"settings\" is not an object"};
  return h;
}

}  // namespace

std::optional<RunHeader> read_run_header(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the metrics log: " + std::strerror(errno));
  int64_t line_number = 0;
  for (std::string text; std::getline(in, text);) {
    ++line_number;
    const auto line = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!line.is_object() || line.value("record", "") != "header") continue;
    try {
      return parse_header(line);
    } catch (const HeaderError& e) {
      throw Error(fmt::format("{}:{}: {}", path, line_number, e.reason));
    }
  }
  return std::nullopt;
}

}  // namespace ptdp
