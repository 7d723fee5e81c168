#include "step_index.hpp"

#include <nlohmann/json.hpp>

#include <ptdp/error.hpp>

#include "safetensors_file.hpp"

namespace ptdp::ckptfs {

namespace {

using nlohmann::json;

// Version 2: every shard of the step's rank files carries its crc32c. Version 1 steps were written
// before checksums were and still load, without the check.
constexpr int kIndexVersion = 2;

DType dtype_from_name(const std::string& name) {
  for (DType d : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::U16, DType::U8})
    if (name == safetensors_dtype_name(d)) return d;
  throw std::invalid_argument("unknown dtype " + name);
}

}  // namespace

std::string overlap_problem(const IndexTensor& t) {
  for (size_t i = 0; i < t.shards.size(); ++i)
    for (size_t j = i + 1; j < t.shards.size(); ++j)
      if (intersect(t.shards[i].region, t.shards[j].region))
        return "shards in " + t.shards[i].file + " (offset " + shape_string(t.shards[i].region.offset) +
               ") and " + t.shards[j].file + " (offset " + shape_string(t.shards[j].region.offset) +
               ") overlap";
  return {};
}

std::string encode_step_index(const StepIndex& index) {
  json tensors = json::object();
  for (const auto& [name, t] : index.tensors) {
    json shards = json::array();
    for (const IndexShard& s : t.shards)
      shards.push_back({{"file", s.file}, {"offset", s.region.offset}, {"shape", s.region.shape}});
    tensors[name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                     {"global_shape", t.global_shape},
                     {"shards", shards}};
  }
  json root = {{"format", "ptdp-checkpoint"},
               {"version", kIndexVersion},
               {"step", index.step},
               {"world_size", index.world_size},
               {"metadata", json::parse(index.metadata_json)},
               {"tensors", tensors}};
  return root.dump(1) + "\n";
}

StepIndex parse_step_index(const std::string& text, const std::filesystem::path& path) {
  auto bad = [&](const std::string& reason) -> Error {
    return Error("ckpt-fs: " + path.string() + ": " + reason);
  };
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw bad(std::string("bad index JSON: ") + e.what());
  }
  StepIndex index;
  try {
    if (root.at("format").get<std::string>() != "ptdp-checkpoint")
      throw std::invalid_argument("format is not \"ptdp-checkpoint\"");
    index.version = root.at("version").get<int>();
    if (index.version < 1 || index.version > kIndexVersion)
      throw std::invalid_argument("version " + root.at("version").dump() + " is not one of 1 to " +
                                  std::to_string(kIndexVersion));
    index.step = root.at("step").get<int64_t>();
    index.world_size = root.at("world_size").get<int>();
    index.metadata_json = root.at("metadata").dump();
    for (const auto& [name, t] : root.at("tensors").items()) {
      IndexTensor tensor;
      tensor.dtype = dtype_from_name(t.at("dtype").get<std::string>());
      tensor.global_shape = t.at("global_shape").get<std::vector<int64_t>>();
      for (const json& s : t.at("shards")) {
        IndexShard shard{s.at("file").get<std::string>(),
                         {s.at("offset").get<std::vector<int64_t>>(), s.at("shape").get<std::vector<int64_t>>()}};
        if (shard.file.empty() || shard.file.find('/') != std::string::npos)
          throw std::invalid_argument("tensor '" + name + "' names shard file \"" + shard.file +
                                      "\" outside the step folder");
        std::string problem = region_problem(shard.region, tensor.global_shape);
        if (!problem.empty())
          throw std::invalid_argument("tensor '" + name + "' shard in " + shard.file + ": " + problem);
        tensor.shards.push_back(std::move(shard));
      }
      std::string overlap = overlap_problem(tensor);
      if (!overlap.empty()) throw std::invalid_argument("tensor '" + name + "': " + overlap);
      index.tensors.emplace(name, std::move(tensor));
    }
  } catch (const json::exception& e) {
    throw bad(std::string("bad index: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw bad(std::string("bad index: ") + e.what());
  }
  return index;
}

}  // namespace ptdp::ckptfs
