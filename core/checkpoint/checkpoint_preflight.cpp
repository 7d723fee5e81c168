#include "checkpoint/checkpoint_preflight.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <vector>

#include "checkpoint/checkpoint_space.hpp"
#include "checkpoint/resume_point.hpp"
#include "checkpoint/resumed_model.hpp"
#include "plugin/manifest_plugin_set.hpp"

namespace ptdp {

namespace {

// The step a run resumes, checked against the manifest's model.
void check_resumed_step(const RunConfig& config, CheckpointStore& store, const ResumePoint& point) {
  const std::string key = resumes_from_elsewhere(config) ? "checkpoint.resume_from" : "checkpoint.dir";
  const std::string where = fmt::format("{} {} step {}", key, point.dir, point.step);
  const nlohmann::json metadata = nlohmann::json::parse(store.metadata(point.step), nullptr, false);
  if (metadata.is_discarded()) throw Error(where + ": its metadata is damaged: not JSON");
  check_resumed_model(config, metadata, where);
}

}  // namespace

void prepare_checkpoint_folder(const RunConfig& config, CheckpointFolderUse use) {
  const std::string& dir = config.checkpoint.dir;
  const bool elsewhere = resumes_from_elsewhere(config);
  if (dir.empty() && !elsewhere) return;
  PluginRegistry registry(PluginRegistry::default_search_path(config.plugins.search_path));
  auto make_store = [&] { return create_slot_plugin<CheckpointStore>(registry, config.plugins); };
  std::shared_ptr<CheckpointStore> source;
  std::vector<int64_t> source_steps;
  if (elsewhere) {
    source = make_store();
    source->open_existing(config.checkpoint.resume_from);
    source_steps = source->list_steps();
  }
  if (dir.empty()) {
    if (const auto point = resume_point(config, {}, source_steps)) check_resumed_step(config, *source, *point);
    return;
  }
  // validate leaves no folder behind that it created only to find out whether it can.
  struct RemoveCreatedFolders {
    std::vector<std::filesystem::path> created;  // deepest first
    ~RemoveCreatedFolders() {
      std::error_code ignored;
      for (const auto& folder : created) std::filesystem::remove(folder, ignored);  // only an empty one goes
    }
  } cleanup;
  if (use == CheckpointFolderUse::Validate) {
    std::error_code ec;
    for (auto folder = std::filesystem::absolute(dir, ec).lexically_normal();
         !ec && !folder.empty() && !std::filesystem::exists(folder, ec) && folder != folder.parent_path();
         folder = folder.parent_path())
      cleanup.created.push_back(folder);
  }
  auto store = make_store();
  store->open(dir);
  if (const auto point = resume_point(config, store->list_steps(), source_steps))
    check_resumed_step(config, elsewhere ? *source : *store, *point);
  if (use == CheckpointFolderUse::Validate) return;  // the space is counted once staging is cleared
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
