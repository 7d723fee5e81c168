#include "manifest/manifest_overrides.hpp"

#include <fmt/format.h>

#include <cctype>
#include <string_view>
#include <vector>

#include "manifest/manifest_loader.hpp"
#include "manifest/table_reader.hpp"

namespace ptdp {

namespace {

bool is_bare_key(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// The value as TOML if the text is exactly one TOML value, else the text as a string.
toml::table parse_value(std::string_view text) {
  try {
    toml::table parsed = toml::parse("v = " + std::string(text) + "\n");
    if (parsed.size() == 1 && parsed.contains("v")) return parsed;
  } catch (const toml::parse_error&) {
  }
  toml::table as_string;
  as_string.insert("v", std::string(text));
  return as_string;
}

}  // namespace

std::string apply_override(toml::table& root, const std::string& assignment) {
  auto fail = [&](const std::string& reason) { throw ManifestError("--set " + assignment + ": " + reason); };
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) fail("expected key.path=value");
  const std::string path = assignment.substr(0, eq);

  std::vector<std::string> keys;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (!is_bare_key(keys.back()))
      fail(fmt::format("bad key path \"{}\" (dot-separated keys of letters, digits, '_' and '-')", path));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }

  toml::table* table = &root;
  std::string walked;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    walked += (i ? "." : "") + keys[i];
    toml::node* node = table->get(keys[i]);
    if (!node) node = &table->insert(keys[i], toml::table{}).first->second;
    table = node->as_table();
    if (!table) fail(fmt::format("{} is not a table (it holds a value of type {})", walked, toml_type_name(*node)));
  }
  toml::table value = parse_value(std::string_view(assignment).substr(eq + 1));
  table->insert_or_assign(keys.back(), std::move(*value.get("v")));
  return path;
}

}  // namespace ptdp
