#include "manifest/table_reader.hpp"

#include <cmath>

#include <fmt/format.h>

#include <algorithm>

namespace ptdp {

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

bool FloatRange::contains(double v) const {  // written so that NaN is outside every range
  const bool above_min = min_inclusive ? v >= min : v > min;
  const bool below_max = max_inclusive ? v <= max : v < max;
  return above_min && below_max;
}

std::string FloatRange::describe() const {
  if (text) return text;
  if (max == std::numeric_limits<double>::infinity())
    return fmt::format("{} {}", min_inclusive ? ">=" : ">", min);
  return fmt::format("in {}{}, {}{}", min_inclusive ? '[' : '(', min, max, max_inclusive ? ']' : ')');
}

std::string TableReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const toml::node* TableReader::take(std::string_view key, const toml::source_region** at) {
  read_keys_.emplace(key);
  if (!table_) return nullptr;
  auto it = table_->find(key);
  if (it == table_->end()) return nullptr;
  *at = &it->first.source();
  return &it->second;
}

void TableReader::wrong_type(std::string_view key, const toml::node& node, std::string_view expected,
                             const toml::source_region* at) const {
  locator_.fail(key_path(key), fmt::format("expected {}, got {}", expected, toml_type_name(node)), at);
}

std::optional<int64_t> TableReader::read_integer(std::string_view key, int64_t min, int64_t max,
                                                 Presence presence) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) {
    if (presence == Presence::required && !missing_) missing_ = key_path(key);
    return std::nullopt;
  }
  const auto* value = node->as_integer();
  if (!value) wrong_type(key, *node, "integer", at);
  const int64_t v = value->get();
  if (v < min || v > max) {
    const std::string range = max == std::numeric_limits<int64_t>::max()
                                  ? fmt::format(">= {}", min)
                                  : fmt::format("between {} and {}", min, max);
    locator_.fail(key_path(key), fmt::format("must be {} (got {})", range, v), at);
  }
  return v;
}

std::optional<double> TableReader::read_float(std::string_view key, FloatRange range) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return std::nullopt;
  double v = 0;
  if (const auto* f = node->as_floating_point()) v = f->get();
  else if (const auto* i = node->as_integer()) v = static_cast<double>(i->get());  // `lr = 1` is fine
  else wrong_type(key, *node, "float", at);
  if (!std::isfinite(v)) locator_.fail(key_path(key), fmt::format("must be a finite number (got {})", v), at);
  if (!range.contains(v)) locator_.fail(key_path(key), fmt::format("must be {} (got {})", range.describe(), v), at);
  return v;
}

void TableReader::read(std::string_view key, bool& out) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return;
  const auto* value = node->as_boolean();
  if (!value) wrong_type(key, *node, "boolean", at);
  out = value->get();
}

void TableReader::read(std::string_view key, std::string& out, std::vector<std::string_view> choices) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return;
  const auto* value = node->as_string();
  if (!value) wrong_type(key, *node, "string", at);
  const std::string& v = value->get();
  if (!choices.empty() && std::find(choices.begin(), choices.end(), v) == choices.end())
    locator_.fail(key_path(key),
                  fmt::format("must be one of \"{}\" (got \"{}\")", fmt::join(choices, "\", \""), v), at);
  out = v;
}

void TableReader::read(std::string_view key, std::vector<std::string>& out) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return;
  const auto* array = node->as_array();
  if (!array) wrong_type(key, *node, "array of strings", at);
  std::vector<std::string> values;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const auto* s = element.as_string();
    if (!s)
      locator_.fail(fmt::format("{}[{}]", key_path(key), i),
                    fmt::format("expected string, got {}", toml_type_name(element)), &element.source());
    values.push_back(s->get());
  }
  out = std::move(values);
}

void TableReader::read_one_or_many(std::string_view key, std::vector<std::string>& out) {
  if (table_)
    if (const toml::node* node = table_->get(key); node && node->is_string()) {
      read_keys_.emplace(key);
      out = {node->as_string()->get()};
      return;
    }
  read(key, out);
}

void TableReader::read(std::string_view key, std::vector<double>& out, FloatRange range) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return;
  const auto* array = node->as_array();
  if (!array) wrong_type(key, *node, "array of numbers", at);
  std::vector<double> values;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    const std::string element_path = fmt::format("{}[{}]", key_path(key), i);
    double v = 0;
    if (const auto* f = element.as_floating_point()) v = f->get();
    else if (const auto* n = element.as_integer()) v = static_cast<double>(n->get());
    else locator_.fail(element_path, fmt::format("expected number, got {}", toml_type_name(element)), &element.source());
    if (!std::isfinite(v) || !range.contains(v))
      locator_.fail(element_path, fmt::format("must be {} (got {})", range.describe(), v), &element.source());
    values.push_back(v);
  }
  out = std::move(values);
}

const toml::table* TableReader::read_table(std::string_view key) {
  const toml::source_region* at = nullptr;
  const toml::node* node = take(key, &at);
  if (!node) return nullptr;
  const auto* table = node->as_table();
  if (!table) wrong_type(key, *node, "table", at);
  return table;
}

void TableReader::finish() {
  if (table_) {
    for (const auto& [key, node] : *table_) {
      if (read_keys_.contains(key.str())) continue;
      const std::string where = path_.empty() ? "the manifest" : "[" + path_ + "]";
      locator_.fail(key_path(key.str()),
                    fmt::format("unknown key (keys of {}: {})", where, fmt::join(read_keys_, ", ")),
                    &key.source());
    }
  }
  if (missing_) locator_.fail(*missing_, "required key is missing");
}

}  // namespace ptdp
