#pragma once
// index.json of a committed step: the caller's metadata and, per tensor, its dtype, global
// shape and the shards (file, offset, shape) that hold it. Readers find shards through it and
// then check each file's own header against it.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <ptdp/tensor.hpp>

#include "tensor_region.hpp"

namespace ptdp::ckptfs {

struct IndexShard {
  std::string file;  // relative to the step folder
  Region region;
};

struct IndexTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> global_shape;
  std::vector<IndexShard> shards;
};

struct StepIndex {
  int version = 0;  // of the index.json read (what encode_step_index writes: the newest)
  int64_t step = 0;
  int world_size = 0;
  std::string metadata_json;  // compact JSON
  std::map<std::string, IndexTensor> tensors;
};

std::string encode_step_index(const StepIndex& index);

// Parses and checks index.json: every shard lies inside its tensor and no two overlap.
// Throws ptdp::Error "ckpt-fs: <path>: <reason>".
StepIndex parse_step_index(const std::string& text, const std::filesystem::path& path);

// Empty when the shards of `t` do not overlap each other, else which two do.
std::string overlap_problem(const IndexTensor& t);

}  // namespace ptdp::ckptfs
