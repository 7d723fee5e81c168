#include "safetensors_file.hpp"

#include <bit>
#include <cstring>

#include <nlohmann/json.hpp>

#include <ptdp/error.hpp>
#include <ptdp/message_text.hpp>

#include "tensor_region.hpp"

namespace ptdp::ckptfs {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian bytes; this code copies them as they are");

namespace {

using nlohmann::json;

// Headers beyond this are refused as corrupt (the reference implementation's limit too).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

constexpr DType kDTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I32,
                             DType::I64, DType::U16,  DType::U8};

[[noreturn]] void bad(const PosixFile& file, const std::string& reason) {
  throw Error("ckpt-fs: " + file.path().string() + ": " + reason);
}

std::vector<int64_t> int_list(const json& j, const char* what) {
  if (!j.is_array()) throw std::invalid_argument(std::string(what) + " is not a list");
  std::vector<int64_t> out;
  for (const json& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      throw std::invalid_argument(std::string(what) + " holds something other than a size");
    out.push_back(v.get<int64_t>());
  }
  return out;
}

}  // namespace

const char* safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::BF16: return "BF16";
    case DType::F16: return "F16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U16: return "U16";
    case DType::U8: return "U8";
  }
  return "?";
}

std::string encode_safetensors_header(const SafetensorsHeader& header) {
  json shards = json::object();
  json root = json::object();
  for (const auto& [name, e] : header.tensors) {
    root[name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                  {"shape", e.shape},
                  {"data_offsets", {e.begin, e.end}}};
    shards[name] = {{"global_shape", e.global_shape}, {"offset", e.offset}};
    if (e.crc32c) shards[name]["crc32c"] = *e.crc32c;
  }
  json ptdp = {{"step", header.step}, {"rank", header.rank}, {"shards", shards}};
  root["__metadata__"] = {{"format", "pt"}, {"ptdp", ptdp.dump()}};
  std::string text = root.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t length = text.size();
  std::memcpy(out.data(), &length, 8);
  return out + text;
}

SafetensorsHeader read_safetensors_header(const PosixFile& file) {
  const uint64_t file_size = file.size();
  if (file_size < 8)
    bad(file, "truncated: " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  uint64_t length = 0;
  file.read_at(&length, 8, 0);
  if (length > kMaxHeaderBytes) bad(file, "bad header: length " + std::to_string(length) + " is implausible");
  if (8 + length > file_size)
    bad(file, "truncated: header needs " + std::to_string(8 + length) + " bytes, the file has " +
                  std::to_string(file_size));
  std::string text(length, '\0');
  file.read_at(text.data(), length, 8);

  SafetensorsHeader header;
  header.data_start = 8 + length;
  const uint64_t data_size = file_size - header.data_start;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    bad(file, "bad header JSON: " + json_reason(e.what()));
  }
  try {
    if (!root.is_object()) throw std::invalid_argument("the header is not a JSON object");
    const json& meta = root.at("__metadata__");
    json ptdp = json::parse(meta.at("ptdp").get<std::string>());
    header.step = ptdp.at("step").get<int64_t>();
    header.rank = ptdp.at("rank").get<int>();
    const json& shards = ptdp.at("shards");
    for (const auto& [key, t] : root.items()) {
      if (key == "__metadata__") continue;
      const std::string name = excerpt(key);
      SafetensorsEntry e;
      std::string dtype = t.at("dtype").get<std::string>();
      bool known = false;
      for (DType d : kDTypes)
        if (dtype == safetensors_dtype_name(d)) e.dtype = d, known = true;
      if (!known) throw std::invalid_argument("tensor '" + name + "' has unknown dtype " + excerpt(dtype));
      e.shape = int_list(t.at("shape"), "shape");
      std::vector<int64_t> range = int_list(t.at("data_offsets"), "data_offsets");
      if (range.size() != 2 || range[0] > range[1])
        throw std::invalid_argument("tensor '" + name + "' has bad data_offsets");
      e.begin = static_cast<uint64_t>(range[0]);
      e.end = static_cast<uint64_t>(range[1]);
      const json& where = shards.at(key);
      e.global_shape = int_list(where.at("global_shape"), "global_shape");
      e.offset = int_list(where.at("offset"), "offset");
      if (where.contains("crc32c")) e.crc32c = where.at("crc32c").get<uint32_t>();
      if (e.end - e.begin != static_cast<uint64_t>(volume(e.shape)) * dtype_size(e.dtype))
        throw std::invalid_argument("tensor '" + name + "' data_offsets [" + std::to_string(e.begin) +
                                    ", " + std::to_string(e.end) + "] do not hold shape " +
                                    shape_string(e.shape) + " of " + dtype_name(e.dtype));
      std::string problem = region_problem({e.offset, e.shape}, e.global_shape);
      if (!problem.empty()) throw std::invalid_argument("tensor '" + name + "': " + problem);
      if (e.end > data_size)
        bad(file, "truncated: tensor '" + name + "' ends at data byte " + std::to_string(e.end) +
                      ", the file holds " + std::to_string(data_size) + " data bytes");
      header.tensors.emplace(key, std::move(e));
    }
  } catch (const json::exception& e) {
    bad(file, "bad header: " + json_reason(e.what()));
  } catch (const std::invalid_argument& e) {
    bad(file, std::string("bad header: ") + e.what());
  }
  return header;
}

}  // namespace ptdp::ckptfs
