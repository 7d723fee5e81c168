#pragma once
// CheckpointStore on a file system.
//
//   <root>/step-00000042/index.json                 what the step holds (see step_index.hpp)
//   <root>/step-00000042/rank-00003.safetensors     rank 3's shards (see safetensors_file.hpp)
//   <root>/.staging-step-00000042/                  the step while it is being written
//   <root>/.removing-step-00000042/                 a committed step being deleted (keep)
//
// A rank spools its shards to rank-R.body.tmp, and finish_rank() writes rank-R.safetensors.tmp,
// fsyncs it and renames it into place: a rank file that exists is complete. commit() checks
// every rank's file, writes index.json, fsyncs, then renames the staging folder to its final
// name and fsyncs the root, so a step is listed only once all of it is on disk, and a crash
// at any point leaves earlier steps untouched. Staging leftovers are ignored by readers and
// replaced by the next write of that step.
//
// One object serves any number of ranks and steps; it is not safe to share between threads.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ptdp/checkpoint_store.hpp>
#include <ptdp/plugin.hpp>

#include "posix_file.hpp"
#include "safetensors_file.hpp"
#include "step_index.hpp"

namespace ptdp::ckptfs {

class FsCheckpointStore final : public CheckpointStore {
 public:
  struct Options {
    bool fsync = true;  // off: faster, but a crash may leave a listed step incomplete
  };

  explicit FsCheckpointStore(Options options) : options_(options) {}
  explicit FsCheckpointStore(const PluginContext& context);

  void open(const std::string& root) override;
  void write_shard(int64_t step, int rank, const ShardInfo& info, const void* host_data) override;
  void finish_rank(int64_t step, int rank) override;
  void commit(int64_t step, int world_size, const std::string& metadata_json) override;
  std::vector<int64_t> list_steps() override;
  std::string metadata(int64_t step) override;
  std::vector<ShardInfo> shards(int64_t step) override;
  void read(int64_t step, const ShardInfo& want, void* host_data) override;
  void open_existing(const std::string& root) override;
  void remove_step(int64_t step) override;
  std::vector<std::string> discard_unfinished() override;
  uint64_t available_bytes() override;

  static std::string step_folder_name(int64_t step);
  static std::string staging_folder_name(int64_t step);
  static std::string rank_file_name(int rank);

 private:
  // A rank's shards of one step, before finish_rank().
  struct PendingRank {
    PosixFile body;
    SafetensorsHeader header;
    uint64_t body_bytes = 0;
    bool failed = false;  // a write failed half way: the spool can no longer be trusted
  };
  template <class T>
  struct Cached {
    FileStamp stamp;
    T value;
  };

  const std::filesystem::path& root() const;
  static std::filesystem::path absolute_folder(const std::string& root);
  void use_root(const std::filesystem::path& dir);
  std::filesystem::path staging_dir(int64_t step) const { return root() / staging_folder_name(step); }
  std::filesystem::path step_dir(int64_t step) const { return root() / step_folder_name(step); }
  PendingRank& start_rank(int64_t step, int rank);
  StepIndex collect_index(int64_t step, int world_size, const std::string& metadata_json);
  void publish(int64_t step);
  const StepIndex& index(int64_t step);
  const SafetensorsHeader& header_of(const PosixFile& file);

  Options options_;
  std::optional<std::filesystem::path> root_;
  std::map<std::pair<int64_t, int>, PendingRank> pending_;
  std::map<int64_t, Cached<StepIndex>> indexes_;
  std::map<std::string, Cached<SafetensorsHeader>> headers_;
};

}  // namespace ptdp::ckptfs
