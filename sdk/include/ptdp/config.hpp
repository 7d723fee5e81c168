#pragma once
// How a plugin declares and reads its configuration. The host owns the manifest; a plugin sees
// its own table through ConfigView after the host validated it against the schema the plugin
// declared (unknown keys, wrong types and out-of-range values are refused before create()).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptdp {

enum class ConfigType : uint32_t { Bool, Int, Float, String };

inline const char* config_type_name(ConfigType t) {
  switch (t) {
    case ConfigType::Bool: return "bool";
    case ConfigType::Int: return "int";
    case ConfigType::Float: return "float";
    case ConfigType::String: return "string";
  }
  return "?";
}

// One key of a plugin's configuration. Plain C types so the table can live in a static array.
struct ConfigKeySpec {
  const char* key;            // e.g. "timeout_s"
  ConfigType type;
  const char* default_value;  // TOML literal ("30", "true", "\"flash\""); nullptr: required
  double min;                 // inclusive bounds for Int and Float; ignored otherwise
  double max;
  const char* choices;        // String only: "a|b|c", or nullptr for any string
  const char* help;
};

// Read-only, host-owned view of a plugin's validated table. Every key of the schema is present
// (defaults filled in); asking for an undeclared key or with the wrong type throws ptdp::Error.
class ConfigView {
 public:
  virtual ~ConfigView() = default;
  virtual bool has(std::string_view key) const = 0;
  virtual bool get_bool(std::string_view key) const = 0;
  virtual int64_t get_int(std::string_view key) const = 0;
  virtual double get_float(std::string_view key) const = 0;
  virtual std::string get_string(std::string_view key) const = 0;
  virtual std::vector<std::string> keys() const = 0;
};

}  // namespace ptdp
