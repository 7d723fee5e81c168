#pragma once
// Reads the keys of one manifest table into typed fields, checking each value's type and range,
// then refuses every key it was not asked for. A key that is absent leaves its field (the
// default) untouched.
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "manifest/manifest_locator.hpp"

namespace ptdp {

enum class Presence { optional, required };

// Bounds of a float key, each inclusive or not. Whatever the bounds, inf and nan are refused.
struct FloatRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_inclusive = true;
  bool max_inclusive = true;
  const char* text = nullptr;  // how describe() says it, when the bounds alone read badly

  static FloatRange at_least(double min) { return {min, std::numeric_limits<double>::infinity(), true, true}; }
  static FloatRange above(double min) { return {min, std::numeric_limits<double>::infinity(), false, true}; }
  static FloatRange from_below(double min, double max) { return {min, max, true, false}; }  // [min, max)
  static FloatRange up_to(double min, double max) { return {min, max, false, true}; }       // (min, max]
  // A value the kernels use as a 32-bit float: representable, and for positive() not zero there.
  static FloatRange positive_float32() {
    return {std::numeric_limits<float>::min(), std::numeric_limits<float>::max(), true, true,
            "> 0 and within 32-bit float range (1.2e-38 to 3.4e38)"};
  }
  static FloatRange non_negative_float32() {
    return {0, std::numeric_limits<float>::max(), true, true, ">= 0 and within 32-bit float range (up to 3.4e38)"};
  }
  bool contains(double v) const;
  std::string describe() const;  // ">= 0", "> 0", "in [0, 1)"
};

class TableReader {
 public:
  // `path` is the table's dotted name ("" for the document); `table` may be null (absent).
  TableReader(const ManifestLocator& locator, std::string path, const toml::table* table)
      : locator_(locator), path_(std::move(path)), table_(table) {}

  template <std::integral Int>
  void read(std::string_view key, Int& out, int64_t min, int64_t max = std::numeric_limits<Int>::max(),
            Presence presence = Presence::optional) {
    if (auto v = read_integer(key, min, max, presence)) out = static_cast<Int>(*v);
  }
  template <std::floating_point Float>
  void read(std::string_view key, Float& out, FloatRange range) {
    if (auto v = read_float(key, range)) out = static_cast<Float>(*v);
  }
  void read(std::string_view key, bool& out);
  // `choices`: the allowed values, or empty for any string.
  void read(std::string_view key, std::string& out, std::vector<std::string_view> choices = {});
  void read(std::string_view key, std::vector<std::string>& out);
  // One string or an array of them (`path = "a.bin"` or `path = ["a.bin", "b_*.bin"]`).
  void read_one_or_many(std::string_view key, std::vector<std::string>& out);
  // An array of numbers, each within `range`.
  void read(std::string_view key, std::vector<double>& out, FloatRange range);
  // A sub-table, or null when absent.
  const toml::table* read_table(std::string_view key);
  // Whether the table has `key`, without reading it.
  bool contains(std::string_view key) const { return table_ && table_->contains(key); }

  // Refuses keys that were not read, then reports the first required key that was missing.
  // Unknown keys come first: a misspelt key is the likely cause of a missing one.
  void finish();

  std::string key_path(std::string_view key) const;

 private:
  const toml::node* take(std::string_view key, const toml::source_region** at);
  [[noreturn]] void wrong_type(std::string_view key, const toml::node& node, std::string_view expected,
                               const toml::source_region* at) const;
  std::optional<int64_t> read_integer(std::string_view key, int64_t min, int64_t max, Presence presence);
  std::optional<double> read_float(std::string_view key, FloatRange range);

  const ManifestLocator& locator_;
  std::string path_;
  const toml::table* table_;
  std::set<std::string, std::less<>> read_keys_;
  std::optional<std::string> missing_;
};

// "integer", "float", "table", ... as a manifest author calls them.
std::string_view toml_type_name(const toml::node& node);

}  // namespace ptdp
