#pragma once
// Says where a manifest key came from, so that every error can point at it: the line of the
// file, or the --set override that put it there.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace ptdp {

class ManifestLocator {
 public:
  ManifestLocator(std::string source, const toml::table& root) : source_(std::move(source)), root_(root) {}

  // Records that `key_path` was set by the override `assignment` (the text after --set).
  void add_override(std::string key_path, std::string assignment);
  bool overridden(std::string_view key_path) const { return find_override(key_path) != nullptr; }

  // Which of the keys a broken cross-field rule is reported on: the first one an override set
  // (the likely culprit on this command line), else the first.
  std::string_view blame(std::initializer_list<std::string_view> keys) const;

  // "file:line:col", "--set key=value", or just "file" when the key is nowhere in the text.
  // `at` is the key's own position when the caller has it.
  std::string where(std::string_view key_path, const toml::source_region* at = nullptr) const;

  // Throws ManifestError "<where>: <key_path>: <reason>".
  [[noreturn]] void fail(std::string_view key_path, std::string_view reason,
                         const toml::source_region* at = nullptr) const;

  const std::string& source() const { return source_; }

 private:
  struct Override {
    std::string key_path;
    std::string assignment;
  };
  const Override* find_override(std::string_view key_path) const;

  std::string source_;
  const toml::table& root_;
  std::vector<Override> overrides_;
};

}  // namespace ptdp
