#pragma once
// ConfigView over a validated toml::table: the read-only, host-owned view a plugin receives.
#include <string>

#include <toml++/toml.h>

#include "ptdp/config.hpp"

namespace ptdp {

class TomlConfigView final : public ConfigView {
 public:
  // `plugin` names the owner in messages.
  TomlConfigView(std::string plugin, toml::table table);

  bool has(std::string_view key) const override;
  bool get_bool(std::string_view key) const override;
  int64_t get_int(std::string_view key) const override;
  double get_float(std::string_view key) const override;
  std::string get_string(std::string_view key) const override;
  std::vector<std::string> keys() const override;

 private:
  const toml::node& at(std::string_view key, ConfigType wanted) const;

  std::string plugin_;
  toml::table table_;
};

}  // namespace ptdp
