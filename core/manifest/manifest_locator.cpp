#include "manifest/manifest_locator.hpp"

#include <fmt/format.h>

#include <ptdp/message_text.hpp>

#include "manifest/manifest_loader.hpp"

namespace ptdp {

namespace {

// True when one path is the other or lies inside it: an override of `plugins.options` covers
// `plugins.options.communicator.x`, and one of `parallel.tensor` covers a rule reported on `parallel`.
bool related(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '.' || b[a.size()] == '[');
}

bool known(const toml::source_region& region) { return region.begin.line > 0; }

}  // namespace

void ManifestLocator::add_override(std::string key_path, std::string assignment) {
  overrides_.push_back({std::move(key_path), std::move(assignment)});
}

const ManifestLocator::Override* ManifestLocator::find_override(std::string_view key_path) const {
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it)  // the last one wins
    if (related(it->key_path, key_path)) return &*it;
  return nullptr;
}

std::string_view ManifestLocator::blame(std::initializer_list<std::string_view> keys) const {
  for (std::string_view key : keys)
    if (overridden(key)) return key;
  return *keys.begin();
}

std::string ManifestLocator::where(std::string_view key_path, const toml::source_region* at) const {
  if (const Override* o = find_override(key_path)) return "--set " + excerpt(o->assignment, 80);
  auto position = [&](const toml::source_region& r) {
    return fmt::format("{}:{}:{}", source_, r.begin.line, r.begin.column);
  };
  if (at && known(*at)) return position(*at);

  // Walk the path as far as it exists; the deepest key found is the best place to point at.
  const toml::source_region* best = nullptr;
  const toml::table* table = &root_;
  std::string_view rest = key_path.substr(0, key_path.find('['));
  while (table && !rest.empty()) {
    const size_t dot = rest.find('.');
    const std::string_view name = rest.substr(0, dot);
    rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
    auto it = table->find(name);
    if (it == table->end()) break;
    if (known(it->first.source())) best = &it->first.source();
    table = it->second.as_table();
  }
  return best ? position(*best) : source_;
}

void ManifestLocator::fail(std::string_view key_path, std::string_view reason,
                           const toml::source_region* at) const {
  // A key or value of the input is quoted at most in part: the line stays readable whatever it held.
  throw ManifestError(fmt::format("{}: {}: {}", where(key_path, at), excerpt(key_path, 80), excerpt(reason, 400)));
}

}  // namespace ptdp
