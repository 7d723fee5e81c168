#include "data/text_documents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "data/mapped_file.hpp"
#include "ptdp/error.hpp"

namespace ptdp {

namespace fs = std::filesystem;

namespace {

constexpr size_t kPieceBytes = 1 << 20;

bool is_jsonl(const fs::path& path) { return path.extension() == ".jsonl" || path.extension() == ".json"; }

// Offset of the first byte that is not part of valid UTF-8 (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or npos.
size_t invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) { n = 2; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) n = 2;
    else if (c == 0xED) { n = 2; hi = 0x9F; }
    else if (c >= 0xEE && c <= 0xEF) n = 2;
    else if (c == 0xF0) { n = 3; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) { n = 3; hi = 0x8F; }
    else return i;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto b = static_cast<uint8_t>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

int64_t line_at(const MappedFile& file, size_t offset) {
  const char* data = reinterpret_cast<const char*>(file.data());
  return 1 + std::count(data, data + offset, '\n');
}

void read_text(const MappedFile& file, bool utf8, const std::function<void(const TextPiece&)>& piece) {
  const std::string_view all(reinterpret_cast<const char*>(file.data()), file.size());
  if (utf8)
    if (size_t bad = invalid_utf8(all); bad != std::string_view::npos)
      throw Error(fmt::format("{}:{}: invalid UTF-8 (byte {:#04x} at offset {})", file.path(), line_at(file, bad),
                              static_cast<uint8_t>(all[bad]), bad));
  size_t first = 0;
  do {
    size_t end = std::min(all.size(), first + kPieceBytes);
    if (end < all.size()) {
      const size_t newline = all.find('\n', end);
      end = newline == std::string_view::npos ? all.size() : newline + 1;
    }
    piece({all.substr(first, end - first), end == all.size(), end});
    first = end;
  } while (first < all.size());
}

void read_jsonl(const MappedFile& file, const std::string& key, const std::function<void(const TextPiece&)>& piece) {
  const std::string_view all(reinterpret_cast<const char*>(file.data()), file.size());
  int64_t line = 0;
  for (size_t first = 0; first < all.size();) {
    ++line;
    const size_t newline = all.find('\n', first);
    const size_t end = newline == std::string_view::npos ? all.size() : newline;
    const std::string_view text = all.substr(first, end - first);
    first = end + 1;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank lines separate nothing
    auto fail = [&](const std::string& reason) { throw Error(fmt::format("{}:{}: {}", file.path(), line, reason)); };
    if (size_t bad = invalid_utf8(text); bad != std::string_view::npos)
      fail(fmt::format("invalid UTF-8 (byte {:#04x} at offset {})", static_cast<uint8_t>(text[bad]),
                       static_cast<size_t>(text.data() - all.data()) + bad));
    const nlohmann::json object = nlohmann::json::parse(text, nullptr, false);
    if (object.is_discarded()) fail("not JSON (each line of a JSONL file is one JSON object)");
    if (!object.is_object()) fail(fmt::format("a JSON {}, not an object", object.type_name()));
    const auto value = object.find(key);
    if (value == object.end()) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : object.items()) keys.push_back(k);
      fail(fmt::format("no key \"{}\" (this line has {}); choose one with --json-key", key,
                       keys.empty() ? "none" : fmt::format("\"{}\"", fmt::join(keys, "\", \""))));
    }
    if (!value->is_string()) fail(fmt::format("\"{}\" is a {}, not a string", key, value->type_name()));
    const std::string& document = value->get_ref<const std::string&>();
    piece({document, true, std::min<uint64_t>(first, all.size())});
  }
}

}  // namespace

std::vector<TextInput> list_text_inputs(const std::vector<std::string>& paths) {
  std::vector<TextInput> inputs;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::recursive_directory_iterator(path, ec))
        if (entry.is_regular_file()) files.push_back(entry.path());
      if (ec) throw Error(path + ": cannot read the folder: " + ec.message());
      if (files.empty()) throw Error(path + ": a folder with no file in it");
      std::sort(files.begin(), files.end());
      for (const fs::path& file : files) inputs.push_back({file.string(), is_jsonl(file), fs::file_size(file, ec)});
    } else {
      if (!fs::exists(path, ec)) throw Error(path + ": cannot open: " + std::make_error_code(std::errc::no_such_file_or_directory).message());
      inputs.push_back({path, is_jsonl(path), fs::file_size(path, ec)});
    }
  }
  return inputs;
}

void read_documents(const TextInput& input, const std::string& json_key, bool utf8,
                    const std::function<void(const TextPiece&)>& piece) {
  const MappedFile file(input.path);
  if (file.size() == 0) return;
  if (input.jsonl) read_jsonl(file, json_key, piece);
  else read_text(file, utf8, piece);
}

}  // namespace ptdp
