#include "step_index.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>

#include <ptdp/error.hpp>
#include <ptdp/message_text.hpp>

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
  throw std::invalid_argument("unknown dtype " + excerpt(name));
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

namespace {

// Fields of index.json read by name, so that a damaged file is refused naming the field and
// what it holds instead of with the JSON library's text. Each throws std::invalid_argument.
const json& field(const json& object, const std::string& key, const std::string& in) {
  if (!object.is_object()) throw std::invalid_argument(in + " is not an object");
  const auto found = object.find(key);
  if (found == object.end()) throw std::invalid_argument(in + " has no \"" + key + "\"");
  return *found;
}

std::string what_it_holds(const json& value) { return excerpt(value.dump(), 40); }

int64_t integer_field(const json& object, const std::string& key, const std::string& in, int64_t low, int64_t high) {
  const json& value = field(object, key, in);
  if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX)) ||
      value.get<int64_t>() < low || value.get<int64_t>() > high)
    throw std::invalid_argument("\"" + key + "\" of " + in + " is " + what_it_holds(value) + ", not an integer in [" +
                                std::to_string(low) + ", " + std::to_string(high) + "]");
  return value.get<int64_t>();
}

std::string string_field(const json& object, const std::string& key, const std::string& in) {
  const json& value = field(object, key, in);
  if (!value.is_string()) throw std::invalid_argument("\"" + key + "\" of " + in + " is " + what_it_holds(value) + ", not a string");
  return value.get<std::string>();
}

std::vector<int64_t> integers_field(const json& object, const std::string& key, const std::string& in) {
  const json& value = field(object, key, in);
  std::vector<int64_t> out;
  if (value.is_array())
    for (const json& element : value) {
      if (!element.is_number_integer() || (element.is_number_unsigned() && element.get<uint64_t>() > uint64_t(INT64_MAX)))
        break;
      out.push_back(element.get<int64_t>());
    }
  if (!value.is_array() || out.size() != value.size())
    throw std::invalid_argument("\"" + key + "\" of " + in + " is " + what_it_holds(value) + ", not a list of integers");
  return out;
}

}  // namespace

StepIndex parse_step_index(const std::string& text, const std::filesystem::path& path) {
  auto bad = [&](const std::string& reason) -> Error {
    return Error("ckpt-fs: " + path.string() + ": " + reason);
  };
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw bad("bad index JSON: " + json_reason(e.what()));
  }
  StepIndex index;
  try {
    if (string_field(root, "format", "the index") != "ptdp-checkpoint")
      throw std::invalid_argument("format is not \"ptdp-checkpoint\"");
    const int64_t version = integer_field(root, "version", "the index", INT64_MIN, INT64_MAX);
    if (version < 1 || version > kIndexVersion)
      throw std::invalid_argument("version " + std::to_string(version) + " is not one of 1 to " +
                                  std::to_string(kIndexVersion));
    index.version = static_cast<int>(version);
    index.step = integer_field(root, "step", "the index", 0, INT64_MAX);
    index.world_size = static_cast<int>(integer_field(root, "world_size", "the index", 1, INT32_MAX));
    index.metadata_json = field(root, "metadata", "the index").dump();
    const json& tensors = field(root, "tensors", "the index");
    if (!tensors.is_object()) throw std::invalid_argument("\"tensors\" of the index is not an object");
    for (const auto& [key, t] : tensors.items()) {
      const std::string name = excerpt(key);
      const std::string in = "tensor '" + name + "'";
      IndexTensor tensor;
      tensor.dtype = dtype_from_name(string_field(t, "dtype", in));
      tensor.global_shape = integers_field(t, "global_shape", in);
      const json& shards = field(t, "shards", in);
      if (!shards.is_array()) throw std::invalid_argument("\"shards\" of " + in + " is not a list");
      for (const json& s : shards) {
        const std::string shard_in = "a shard of " + in;
        IndexShard shard{string_field(s, "file", shard_in),
                         {integers_field(s, "offset", shard_in), integers_field(s, "shape", shard_in)}};
        if (shard.file.empty() || shard.file.size() > 255 || shard.file.find('/') != std::string::npos)
          throw std::invalid_argument(in + " names shard file \"" + excerpt(shard.file) +
                                      "\", which is no file name in the step folder");
        std::string problem = region_problem(shard.region, tensor.global_shape);
        if (!problem.empty())
          throw std::invalid_argument(in + " shard in " + excerpt(shard.file) + ": " + excerpt(problem, 160));
        tensor.shards.push_back(std::move(shard));
      }
      std::string overlap = overlap_problem(tensor);
      if (!overlap.empty()) throw std::invalid_argument(in + ": " + excerpt(overlap, 200));
      index.tensors.emplace(key, std::move(tensor));
    }
  } catch (const json::exception& e) {
    throw bad("bad index: " + json_reason(e.what()));
  } catch (const std::invalid_argument& e) {
    throw bad(std::string("bad index: ") + e.what());
  }
  return index;
}

}  // namespace ptdp::ckptfs
