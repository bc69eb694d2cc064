// Reading fields of JSON objects that arrive from outside (API objects, a status a user may have
// edited) without trusting their shape: a missing key, a value of another type or a parent that
// is not an object reads as "absent", never as an exception or a copy of a subtree.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl {

// `&object[key]` when `object` is an object holding `key`, whatever its value (null included);
// nullptr otherwise. For checks that tell a field set to null from a field left out.
const nlohmann::json* json_find(const nlohmann::json& object, std::string_view key);
// As json_find, but a null value reads as absent: a field set to null is a field not set, as
// Kubernetes reads a manifest.
const nlohmann::json* json_find_non_null(const nlohmann::json& object, std::string_view key);
// `object[key]` when `object` is an object holding `key`; a null value otherwise. No copy.
const nlohmann::json& json_member(const nlohmann::json& object, std::string_view key);
// Follows `path` with json_member: json_at(pod, {"metadata", "labels"}).
const nlohmann::json& json_at(const nlohmann::json& object,
                              std::initializer_list<std::string_view> path);
// `object[key]` when it is an object; an empty object otherwise. No copy.
const nlohmann::json& json_object(const nlohmann::json& object, std::string_view key);
// `object[key]` when it is a string; `fallback` otherwise.
std::string json_string(const nlohmann::json& object, std::string_view key,
                        std::string_view fallback = "");
// `object[key]` when it is an integer that fits (a float with an integral value counts), nullopt
// otherwise.
std::optional<long long> json_integer(const nlohmann::json& object, std::string_view key);
// `object[key]` when it is a number, nullopt otherwise.
std::optional<double> json_number(const nlohmann::json& object, std::string_view key);
// `object[key]` when it is a boolean, nullopt otherwise.
std::optional<bool> json_bool(const nlohmann::json& object, std::string_view key);
// The strings of the list `object[key]` in order, entries of other types skipped; empty when it
// is not a list.
std::vector<std::string> json_strings(const nlohmann::json& object, std::string_view key);

}  // namespace depl
