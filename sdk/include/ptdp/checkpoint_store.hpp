#pragma once
// CheckpointStore: named tensor shards with their place in the global tensor, committed per step
// atomically. A step is listed only after every rank's shards and the step's metadata are on
// disk; an interrupted write leaves earlier steps untouched. open() is for the run that writes:
// it creates the folder and refuses one it cannot write in.
#include <cstdint>
#include <string>
#include <vector>

#include "ptdp/tensor.hpp"

namespace ptdp {

struct ShardInfo {
  std::string name;                   // global tensor name, e.g. "layers.3.mlp.fc1.weight"
  DType dtype = DType::F32;
  std::vector<int64_t> global_shape;
  std::vector<int64_t> offset;        // where this shard starts in the global tensor
  std::vector<int64_t> shape;         // this shard's extent
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  // Directory (or URI) that holds the steps. Created if absent.
  virtual void open(const std::string& root) = 0;
  // Each rank writes its shards of `step`, then finish_rank(); nothing is visible yet.
  virtual void write_shard(int64_t step, int rank, const ShardInfo& info, const void* host_data) = 0;
  virtual void finish_rank(int64_t step, int rank) = 0;
  // Called once (by rank 0, after all ranks finished): makes the step visible atomically.
  // Throws if any of the world's ranks did not finish the step.
  virtual void commit(int64_t step, int world_size, const std::string& metadata_json) = 0;
  // Committed steps, ascending.
  virtual std::vector<int64_t> list_steps() = 0;
  virtual std::string metadata(int64_t step) = 0;
  virtual std::vector<ShardInfo> shards(int64_t step) = 0;
  // Reads the region `want` (name, offset, shape) of a committed step's global tensor into
  // host memory, from whichever shards cover it, so a step saved under one layout loads under
  // another. Throws ptdp::Error naming the file and the reason on any corruption or mismatch.
  virtual void read(int64_t step, const ShardInfo& want, void* host_data) = 0;

  // Since ABI 1.1. Opens a folder (or URI) that must already exist, to read its steps only:
  // nothing is created or written, so it serves folders the caller may not write in.
  virtual void open_existing(const std::string& root) = 0;
  // Since ABI 1.1. Deletes a committed step (checkpoint.keep): the step stops being listed at
  // once, atomically, before its data goes, so a crash half way never leaves a damaged step.
  virtual void remove_step(int64_t step) = 0;
  // Since ABI 1.1. Deletes what interrupted saves left behind (never a committed step) and
  // returns one line per thing removed, for the log. Called by one process before a run's
  // first save, while no save of that folder is in progress.
  virtual std::vector<std::string> discard_unfinished() = 0;
  // Since ABI 1.1. Bytes a save can still use, or UINT64_MAX when the store cannot tell.
  virtual uint64_t available_bytes() = 0;
};

// Committed steps as a person reads them in a message: "100, 200, 300", the first and last five
// of a long list with "..." between them, or "none".
inline std::string step_list(const std::vector<int64_t>& steps) {
  if (steps.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps.size() > 10 && i == 5) {
      out += ", ...";
      i = steps.size() - 5;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(steps[i]);
  }
  return out;
}

}  // namespace ptdp
