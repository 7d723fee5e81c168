#pragma once
// A ConfigView over a fixed set of values, for creating plugins in tests the way the host does.
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include <ptdp/config.hpp>

namespace ptdp::test {

class MapConfigView final : public ConfigView {
 public:
  using Value = std::variant<bool, int64_t, double, std::string>;
  explicit MapConfigView(std::map<std::string, Value> values) : values_(std::move(values)) {}

  bool has(std::string_view key) const override;
  bool get_bool(std::string_view key) const override;
  int64_t get_int(std::string_view key) const override;
  double get_float(std::string_view key) const override;
  std::string get_string(std::string_view key) const override;
  std::vector<std::string> keys() const override;

 private:
  template <class T>
  T get(std::string_view key, const char* type) const;
  std::map<std::string, Value> values_;
};

}  // namespace ptdp::test
