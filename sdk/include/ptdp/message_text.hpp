#pragma once
// Pieces of input quoted in an error message. A refusal is one line of at most a few hundred
// characters, whatever the input held: a key of a megabyte, a value with line breaks, or a
// library's own text (nlohmann's "[json.exception.type_error.302] type must be ..."), which says
// nothing to the person who gave the input.
#include <cstddef>
#include <string>
#include <string_view>

namespace ptdp {

// `text` on one line (line breaks and other control characters shown as '?') and, when longer
// than `limit` characters, its start with how long it is: "aaaa... (1048576 characters)".
inline std::string excerpt(std::string_view text, size_t limit = 64) {
  std::string out;
  const size_t kept = text.size() > limit ? limit : text.size();
  out.reserve(kept + 32);
  for (size_t i = 0; i < kept; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  if (kept < text.size()) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

// A JSON library's exception text as a reason: without the "[json.exception.KIND.N] " prefix,
// on one line and at most `limit` characters.
inline std::string json_reason(std::string_view what, size_t limit = 160) {
  if (what.substr(0, 16) == "[json.exception.") {
    const size_t end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  return excerpt(what, limit);
}

}  // namespace ptdp
