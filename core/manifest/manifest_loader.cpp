#include "manifest/manifest_loader.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "manifest/manifest_locator.hpp"
#include "manifest/manifest_overrides.hpp"
#include "manifest/manifest_rules.hpp"
#include "manifest/table_reader.hpp"
#include "plugin/plugin_slots.hpp"

namespace ptdp {

namespace fs = std::filesystem;

namespace {

// Bounds that keep every product of the rules (p·t·d, b·d, 12·l·h², ...) inside 64 bits and
// every derived size (padded vocab, 4·hidden) inside an int.
constexpr int64_t kMaxParallel = 65536;
constexpr int64_t kMaxLayers = 65536;
constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxSeqLen = 1 << 24;
constexpr int64_t kMaxVocab = 1 << 30;
constexpr int64_t kMaxBatch = 1 << 30;
// A day, as comm-nccl's own timeout_s; a wait converted to nanoseconds stays inside 64 bits.
constexpr double kMaxTimeoutSeconds = 86400;
// Steps a run can count to while step · global_batch (the data position) stays inside 64 bits.
constexpr int64_t kMaxSteps = int64_t{1} << 32;

void read_run(TableReader r, RunConfig::Run& run) {
  r.read("name", run.name);
  r.read("steps", run.steps, 1, kMaxSteps);
  r.read("seed", run.seed, 0, std::numeric_limits<int64_t>::max());
  r.read("log_every", run.log_every, 1);
  r.finish();
}

void read_model(TableReader r, RunConfig::Model& model) {
  r.read("layers", model.layers, 1, kMaxLayers, Presence::required);
  r.read("hidden", model.hidden, 1, kMaxHidden, Presence::required);
  r.read("heads", model.heads, 1, kMaxHidden, Presence::required);
  r.read("seq_len", model.seq_len, 1, kMaxSeqLen, Presence::required);
  r.read("vocab", model.vocab, 1, kMaxVocab, Presence::required);
  r.read("ffn_hidden", model.ffn_hidden, 1, 4 * kMaxHidden);
  r.read("dropout", model.dropout, FloatRange::from_below(0, 1));
  r.read("layernorm_eps", model.layernorm_eps, FloatRange::positive_float32());
  r.finish();
}

void read_parallel(TableReader r, RunConfig::Parallel& par) {
  r.read("tensor", par.tensor, 1, kMaxParallel);
  r.read("pipeline", par.pipeline, 1, kMaxParallel);
  r.read("data", par.data, 1, kMaxParallel);
  r.read("virtual_stages", par.virtual_stages, 1, kMaxLayers);
  r.read("micro_batch", par.micro_batch, 1, kMaxBatch);
  r.read("global_batch", par.global_batch, 1, kMaxBatch);
  r.read("scatter_gather", par.scatter_gather);
  r.read("sequence_parallel", par.sequence_parallel);
  r.read("recompute", par.recompute, {"none", "full", "selective"});
  r.read("recompute_every", par.recompute_every, 1, kMaxLayers);
  r.read("recompute_modules", par.recompute_modules);
  r.read("distributed_optimizer", par.distributed_optimizer);
  r.read("overlap_param_gather", par.overlap_param_gather);
  r.read("bucket_elements", par.bucket_elements, 1, int64_t(1) << 40);
  r.finish();
}

void read_optimizer(TableReader r, RunConfig::Optimizer& opt) {
  r.read("type", opt.type, {"adam", "adamw"});
  r.read("lr", opt.lr, FloatRange::positive_float32());
  r.read("min_lr", opt.min_lr, FloatRange::non_negative_float32());
  r.read("beta1", opt.beta1, FloatRange::from_below(0, 1));
  r.read("beta2", opt.beta2, FloatRange::from_below(0, 1));
  r.read("eps", opt.eps, FloatRange::positive_float32());
  r.read("weight_decay", opt.weight_decay, FloatRange::non_negative_float32());
  r.read("grad_clip", opt.grad_clip, FloatRange::non_negative_float32());
  r.read("warmup_steps", opt.warmup_steps, 0, kMaxSteps);
  r.read("decay_steps", opt.decay_steps, 0, kMaxSteps);
  r.read("decay", opt.decay, {"cosine", "linear", "constant"});
  r.finish();
}

void read_precision(TableReader r, RunConfig::Precision& precision) {
  r.read("params", precision.params, {"fp32", "bf16", "fp16"});
  r.read("loss_scale_initial", precision.loss_scale_initial, FloatRange::positive_float32());
  r.read("loss_scale_window", precision.loss_scale_window, 1, kMaxSteps);
  r.read("loss_scale_min", precision.loss_scale_min, FloatRange::positive_float32());
  r.read("loss_scale_hysteresis", precision.loss_scale_hysteresis, 1, kMaxSteps);
  r.read("fp8", precision.fp8, {"off", "hybrid"});
  r.read("fp8_recipe", precision.fp8_recipe, {"tensorwise", "delayed"});
  r.read("fp8_amax_history", precision.fp8_amax_history, 1, 1 << 16);
  r.read("fp8_amax_compute", precision.fp8_amax_compute, {"max", "most_recent"});
  r.read("fp8_margin", precision.fp8_margin, 0, 32);
  r.read("fp8_bf16_first_blocks", precision.fp8_bf16_first_blocks, 0, kMaxLayers);
  r.read("fp8_bf16_last_blocks", precision.fp8_bf16_last_blocks, 0, kMaxLayers);
  r.finish();
}

void read_data(TableReader r, RunConfig::Data& data) {
  r.read_one_or_many("path", data.path);
  r.read_one_or_many("val_path", data.val_path);
  r.read("weights", data.weights, FloatRange::above(0));
  r.read("tokenizer", data.tokenizer);
  r.read("format", data.format, {"auto", "ptdp", "llmc", "text"});
  r.read("val_fraction", data.val_fraction, FloatRange::from_below(0, 1));
  r.read("val_every", data.val_every, 0);
  r.read("val_batches", data.val_batches, 1);
  r.finish();
}

void read_checkpoint(TableReader r, RunConfig::Checkpoint& checkpoint) {
  r.read("dir", checkpoint.dir);
  r.read("every", checkpoint.every, 0);
  r.read("resume", checkpoint.resume);
  r.read("keep", checkpoint.keep, 0);
  r.read("resume_from", checkpoint.resume_from);
  r.read("resume_step", checkpoint.resume_step, 0, kMaxSteps);
  r.finish();
}

// The communicator's slot was once called `comm`, as key and as option table. The old name still
// loads, with a warning naming the new one; a manifest giving both is refused.
constexpr std::string_view kOldCommunicatorSlot = "comm";

// Which of its names `r` reads `slot` from: only the communicator's has an old one.
std::string_view slot_key_in(const PluginSlot& slot, const TableReader& r, const ManifestLocator& locator,
                             std::vector<std::string>& warnings) {
  if (slot.kind != PluginKind::Communicator || !r.contains(kOldCommunicatorSlot)) return slot.name;
  const std::string old_key = r.key_path(kOldCommunicatorSlot), key = r.key_path(slot.name);
  if (r.contains(slot.name))
    locator.fail(old_key, fmt::format("{} names the same slot: keep {} and delete {}, its deprecated name", key, key,
                                      old_key));
  warnings.push_back(fmt::format("{}: {} is deprecated: write {}", locator.where(old_key), old_key, key));
  return kOldCommunicatorSlot;
}

void read_plugins(TableReader r, const ManifestLocator& locator, RunConfig::Plugins& plugins,
                  std::vector<std::string>& warnings) {
  for (const PluginSlot& slot : kPluginSlots) r.read(slot_key_in(slot, r, locator, warnings), plugins.*slot.plugin);
  r.read("search_path", plugins.search_path);
  // Option tables are kept as written: each plugin's registry entry checks them against the
  // schema the plugin declares.
  TableReader options(locator, r.key_path("options"), r.read_table("options"));
  for (const PluginSlot& slot : kPluginSlots) {
    const toml::table* table = options.read_table(slot_key_in(slot, options, locator, warnings));
    plugins.options[slot.name] = table ? *table : toml::table{};
  }
  options.finish();
  r.finish();
}

void read_launch(TableReader r, RunConfig::Launch& launch) {
  r.read("nproc_per_node", launch.nproc_per_node, 1, 1024);
  r.read("nnodes", launch.nnodes, 1, kMaxParallel);
  r.read("master_addr", launch.master_addr);
  r.read("master_port", launch.master_port, 0, 65535);
  // At least a second: no rendezvous completes in less, and a shorter wait fails in the handshake
  // with a message that cannot name this key.
  r.read("timeout_s", launch.timeout_s, FloatRange{1, kMaxTimeoutSeconds, true, true});
  r.read("ranks_per_gpu", launch.ranks_per_gpu, 1, 1024);
  r.finish();
}

// Paths in the file are relative to the file's folder; paths given with --set to the current
// directory, like any other path typed on a command line.
void resolve_paths(RunConfig& c, const ManifestLocator& locator, const fs::path& manifest_dir) {
  const fs::path cwd = fs::current_path();
  auto resolve = [&](std::string& path, const std::string& key) {
    if (path.empty()) return;
    const fs::path& base = locator.overridden(key) ? cwd : manifest_dir;
    path = (base / path).lexically_normal().string();  // an absolute `path` replaces `base`
  };
  for (size_t i = 0; i < c.data.path.size(); ++i) resolve(c.data.path[i], fmt::format("data.path[{}]", i));
  for (size_t i = 0; i < c.data.val_path.size(); ++i)
    resolve(c.data.val_path[i], fmt::format("data.val_path[{}]", i));
  resolve(c.data.tokenizer, "data.tokenizer");
  resolve(c.checkpoint.dir, "checkpoint.dir");
  resolve(c.checkpoint.resume_from, "checkpoint.resume_from");
  for (size_t i = 0; i < c.plugins.search_path.size(); ++i)
    resolve(c.plugins.search_path[i], fmt::format("plugins.search_path[{}]", i));
}

// A manifest (or a cluster file) is a few kilobytes; anything this large is not one (/dev/zero, a
// data file named by mistake), and reading it whole would take the machine's memory.
constexpr size_t kMaxConfigBytes = 4 << 20;

RunConfig load(std::string_view text, const std::string& source, const fs::path& manifest_dir,
               const std::vector<std::string>& overrides, const std::optional<LaunchedWorld>& launched) {
  toml::table root = parse_config_text(text, source);
  ManifestLocator locator(source, root);
  for (const std::string& assignment : overrides) locator.add_override(apply_override(root, assignment), assignment);

  RunConfig c;
  c.source = source;
  TableReader top(locator, "", &root);
  const toml::table* run = top.read_table("run");
  const toml::table* model = top.read_table("model");
  const toml::table* parallel = top.read_table("parallel");
  const toml::table* optimizer = top.read_table("optimizer");
  const toml::table* precision = top.read_table("precision");
  const toml::table* data = top.read_table("data");
  const toml::table* checkpoint = top.read_table("checkpoint");
  const toml::table* plugins = top.read_table("plugins");
  const toml::table* launch = top.read_table("launch");
  top.finish();

  read_run({locator, "run", run}, c.run);
  read_model({locator, "model", model}, c.model);
  read_parallel({locator, "parallel", parallel}, c.parallel);
  read_optimizer({locator, "optimizer", optimizer}, c.optimizer);
  read_precision({locator, "precision", precision}, c.precision);
  read_data({locator, "data", data}, c.data);
  read_checkpoint({locator, "checkpoint", checkpoint}, c.checkpoint);
  read_plugins({locator, "plugins", plugins}, locator, c.plugins, c.warnings);
  read_launch({locator, "launch", launch}, c.launch);

  settle_data_parallel(c, locator, parallel && parallel->contains("data"), launched);
  if (!(parallel && parallel->contains("bucket_elements")))
    c.parallel.bucket_elements = default_bucket_elements(c.parallel.data);
  apply_manifest_rules(c, locator);
  resolve_paths(c, locator, manifest_dir);
  return c;
}

}  // namespace

std::string read_config_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ManifestError(path + ": cannot read " + what + ": " + std::strerror(EISDIR));
  // Reading a FIFO or a socket waits for a writer, forever if none comes.
  if (fs::is_fifo(path, ec) || fs::is_socket(path, ec))
    throw ManifestError(path + ": cannot read " + what + ": a FIFO or socket, not a file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ManifestError(path + ": cannot read " + what + ": " + std::strerror(errno));
  std::string text(kMaxConfigBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad()) throw ManifestError(path + ": cannot read " + what + ": " + std::strerror(errno));
  text.resize(static_cast<size_t>(file.gcount()));
  if (text.size() > kMaxConfigBytes)
    throw ManifestError(fmt::format("{}: not a {}: more than {} MiB (a {} is a few kilobytes)", path, what,
                                    kMaxConfigBytes >> 20, what));
  return text;
}

toml::table parse_config_text(std::string_view text, const std::string& source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ManifestError(fmt::format("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column,
                                    e.description()));
  }
}

RunConfig load_manifest(const std::string& path, const std::vector<std::string>& overrides,
                        const std::optional<LaunchedWorld>& launched) {
  return load(read_config_file(path, "manifest"), path, fs::absolute(path).parent_path(), overrides, launched);
}

RunConfig load_manifest_string(std::string_view text, const std::string& source_name,
                               const std::vector<std::string>& overrides,
                               const std::optional<LaunchedWorld>& launched) {
  return load(text, source_name, fs::current_path(), overrides, launched);
}

}  // namespace ptdp
