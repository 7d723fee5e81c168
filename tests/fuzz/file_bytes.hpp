#pragma once
// A file's bytes, read and written whole, for the fuzz tests' inputs and their check that
// nothing on disk changed.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ptdp::fuzz {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace ptdp::fuzz
