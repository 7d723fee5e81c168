#include "checkpoint/checkpoint_preflight.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "checkpoint/checkpoint_space.hpp"
#include "checkpoint/resume_point.hpp"
#include "plugin/plugin_factory.hpp"
#include "plugin/plugin_registry.hpp"

namespace ptdp {

void prepare_checkpoint_folder(const RunConfig& config) {
  const std::string& dir = config.checkpoint.dir;
  const bool elsewhere = resumes_from_elsewhere(config);
  if (dir.empty() && !elsewhere) return;
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  const auto& info = registry.load(config.plugins.checkpoint, PluginKind::CheckpointStore, "checkpoint");
  auto make_store = [&] { return create_plugin<CheckpointStore>(info, config.plugins.options.at("checkpoint")); };
  std::vector<int64_t> source_steps;
  if (elsewhere) {
    auto source = make_store();
    source->open_existing(config.checkpoint.resume_from);
    source_steps = source->list_steps();
  }
  if (dir.empty()) {
    resume_point(config, {}, source_steps);
    return;
  }
  auto store = make_store();
  store->open(dir);
  resume_point(config, store->list_steps(), source_steps);
  for (const std::string& line : store->discard_unfinished()) spdlog::info("checkpoint: {}", line);
  const uint64_t step = checkpoint_step_bytes(config.model), needed = checkpoint_save_bytes(config.model);
  const uint64_t available = store->available_bytes();
  if (available == UINT64_MAX) return;
  if (available < needed)
    throw Error(fmt::format("checkpoint.dir {}: a save needs {} free while it is written (twice the step's {}), "
                            "only {} is free; nothing was changed. Free space or use another checkpoint.dir",
                            dir, byte_size(needed), byte_size(step), byte_size(available)));
  spdlog::info("checkpoints go to {}: {} a step, a save needs {} free while it is written, {} free", dir,
               byte_size(step), byte_size(needed), byte_size(available));
}

}  // namespace ptdp
