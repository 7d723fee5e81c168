#include "support/map_config_view.hpp"

#include <ptdp/error.hpp>

namespace ptdp::test {

bool MapConfigView::has(std::string_view key) const { return values_.count(std::string(key)) != 0; }

std::vector<std::string> MapConfigView::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : values_) out.push_back(key);
  return out;
}

template <class T>
T MapConfigView::get(std::string_view key, const char* type) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end()) throw Error("config key '" + std::string(key) + "' is not set");
  if (!std::holds_alternative<T>(it->second))
    throw Error("config key '" + std::string(key) + "' is not a " + type);
  return std::get<T>(it->second);
}

bool MapConfigView::get_bool(std::string_view key) const { return get<bool>(key, "bool"); }
int64_t MapConfigView::get_int(std::string_view key) const { return get<int64_t>(key, "int"); }
double MapConfigView::get_float(std::string_view key) const { return get<double>(key, "float"); }
std::string MapConfigView::get_string(std::string_view key) const { return get<std::string>(key, "string"); }

}  // namespace ptdp::test
