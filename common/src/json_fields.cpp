#include "depl/common/json_fields.hpp"

#include <cmath>
#include <limits>

namespace depl {

using nlohmann::json;

const json* json_find(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it != object.end() ? &*it : nullptr;
}

const json* json_find_non_null(const json& object, std::string_view key) {
  const json* value = json_find(object, key);
  return value != nullptr && !value->is_null() ? value : nullptr;
}

const json& json_member(const json& object, std::string_view key) {
  static const json kNull;
  const json* value = json_find(object, key);
  return value != nullptr ? *value : kNull;
}

const json& json_at(const json& object, std::initializer_list<std::string_view> path) {
  const json* at = &object;
  for (std::string_view key : path) at = &json_member(*at, key);
  return *at;
}

const json& json_object(const json& object, std::string_view key) {
  static const json kEmpty = json::object();
  const json& value = json_member(object, key);
  return value.is_object() ? value : kEmpty;
}

std::string json_string(const json& object, std::string_view key, std::string_view fallback) {
  const json& value = json_member(object, key);
  return value.is_string() ? value.get_ref<const std::string&>() : std::string(fallback);
}

std::optional<long long> json_integer(const json& object, std::string_view key) {
  const json& value = json_member(object, key);
  if (value.is_number_integer()) return value.get<long long>();
  if (!value.is_number_float()) return std::nullopt;
  // A float that does not fit, or has a fraction, is not an integer: converting it would be
  // undefined behaviour or silently lose the fraction.
  const double number = value.get<double>();
  if (!(number >= -9.2e18 && number <= 9.2e18) || std::floor(number) != number) {
    return std::nullopt;
  }
  return static_cast<long long>(number);
}

std::optional<double> json_number(const json& object, std::string_view key) {
  const json& value = json_member(object, key);
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

std::optional<bool> json_bool(const json& object, std::string_view key) {
  const json& value = json_member(object, key);
  if (!value.is_boolean()) return std::nullopt;
  return value.get<bool>();
}

std::vector<std::string> json_strings(const json& object, std::string_view key) {
  std::vector<std::string> out;
  const json& list = json_member(object, key);
  if (!list.is_array()) return out;
  for (const json& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace depl
