#pragma once
// One rank's shards of one step as a safetensors file: 8-byte little-endian header length, a
// JSON header (per tensor: dtype, shape, data_offsets into the bytes that follow), then the
// bytes. The header's "__metadata__" (a string-to-string map, as the format requires) holds,
// under "ptdp", a JSON string with the step, the rank and each shard's global shape and offset,
// so a file read on its own still says where its shards belong, and each shard's CRC-32C.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ptdp/tensor.hpp>

#include "posix_file.hpp"

namespace ptdp::ckptfs {

struct SafetensorsEntry {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> global_shape;
  std::vector<int64_t> offset;  // in the global tensor
  uint64_t begin = 0;           // byte range in the data section
  uint64_t end = 0;
  std::optional<uint32_t> crc32c;  // of the bytes [begin, end); absent in files from before checksums
};

struct SafetensorsHeader {
  int64_t step = 0;
  int rank = 0;
  std::map<std::string, SafetensorsEntry> tensors;
  uint64_t data_start = 0;  // file offset of the data section (set by read_safetensors_header)
};

const char* safetensors_dtype_name(DType dtype);

// The 8-byte length and the JSON header, padded with spaces so the data starts 8-byte aligned.
std::string encode_safetensors_header(const SafetensorsHeader& header);

// Parses and checks the header of `file`: every tensor's bytes must lie inside the file.
// Throws ptdp::Error "ckpt-fs: <file>: <reason>".
SafetensorsHeader read_safetensors_header(const PosixFile& file);

}  // namespace ptdp::ckptfs
