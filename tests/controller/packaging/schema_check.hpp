// A minimal schema validator for the packaging tests: JSON Schema as values.schema.json uses it,
// and the structural OpenAPI v3 schema of a CRD as `kubectl apply` (field validation Strict)
// checks it. Keywords: type (one or a list; x-kubernetes-int-or-string), properties, required,
// additionalProperties (false or a schema), items, enum, minimum, maximum, exclusiveMinimum and
// exclusiveMaximum (OpenAPI's boolean form and JSON Schema's numeric form), minLength, pattern
// (ECMAScript, as JSON Schema's), minItems, x-kubernetes-preserve-unknown-fields. Any other
// keyword is ignored.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace depl::packaging {

enum class SchemaDialect {
  JsonSchema,  // undeclared properties are allowed unless additionalProperties says otherwise
  Structural,  // CRD: undeclared properties are unknown fields unless the schema preserves them
};

namespace detail {

inline bool type_matches(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() ||
           (v.is_number_float() && v.get<double>() == static_cast<double>(v.get<long long>()));
  if (type == "null") return v.is_null();
  return false;
}

inline void check(const nlohmann::json& v, const nlohmann::json& s, const std::string& path,
                  SchemaDialect dialect, std::vector<std::string>& errors) {
  const std::string where = path.empty() ? "<root>" : path;
  if (s.value("x-kubernetes-int-or-string", false)) {
    if (!v.is_string() && !v.is_number_integer())
      errors.push_back(fmt::format("{}: must be an integer or a string", where));
    return;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_array()) {
      for (const auto& t : s["type"]) types.push_back(t.get<std::string>());
    } else {
      types.push_back(s["type"].get<std::string>());
    }
    bool ok = false;
    for (const auto& t : types) ok = ok || type_matches(v, t);
    if (!ok) {
      errors.push_back(
          fmt::format("{}: must be of type {}, got {}", where, fmt::join(types, " or "), v.dump()));
      return;
    }
  }
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found)
      errors.push_back(fmt::format("{}: {} is not one of {}", where, v.dump(), s["enum"].dump()));
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    const auto& exmin = s.value("exclusiveMinimum", nlohmann::json());
    const auto& exmax = s.value("exclusiveMaximum", nlohmann::json());
    if (s.contains("minimum")) {
      const double m = s["minimum"].get<double>();
      const bool exclusive = exmin.is_boolean() && exmin.get<bool>();
      if (exclusive ? !(x > m) : !(x >= m))
        errors.push_back(fmt::format("{}: {} must be {} {}", where, v.dump(),
                                     exclusive ? "greater than" : "at least", m));
    }
    if (exmin.is_number() && !(x > exmin.get<double>()))
      errors.push_back(
          fmt::format("{}: {} must be greater than {}", where, v.dump(), exmin.dump()));
    if (s.contains("maximum")) {
      const double m = s["maximum"].get<double>();
      const bool exclusive = exmax.is_boolean() && exmax.get<bool>();
      if (exclusive ? !(x < m) : !(x <= m))
        errors.push_back(fmt::format("{}: {} must be {} {}", where, v.dump(),
                                     exclusive ? "less than" : "at most", m));
    }
    if (exmax.is_number() && !(x < exmax.get<double>()))
      errors.push_back(fmt::format("{}: {} must be less than {}", where, v.dump(), exmax.dump()));
  }
  if (v.is_string() && s.contains("minLength") &&
      v.get<std::string>().size() < s["minLength"].get<std::size_t>())
    errors.push_back(fmt::format("{}: shorter than {} characters", where, s["minLength"].dump()));
  if (v.is_string() && s.contains("pattern") &&
      !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
    errors.push_back(fmt::format("{}: {} does not match {}", where, v.dump(), s["pattern"].dump()));
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>())
      errors.push_back(fmt::format("{}: needs at least {} item(s)", where, s["minItems"].dump()));
    if (s.contains("items")) {
      for (std::size_t i = 0; i < v.size(); ++i)
        check(v[i], s["items"], fmt::format("{}[{}]", path, i), dialect, errors);
    }
  }
  if (v.is_object()) {
    const auto props = s.value("properties", nlohmann::json::object());
    for (const auto& r : s.value("required", nlohmann::json::array())) {
      if (!v.contains(r.get<std::string>()))
        errors.push_back(
            fmt::format("{}{}{}: required", path, path.empty() ? "" : ".", r.get<std::string>()));
    }
    const bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
    for (const auto& [key, child] : v.items()) {
      const std::string child_path = path.empty() ? key : path + "." + key;
      if (props.contains(key)) {
        check(child, props[key], child_path, dialect, errors);
      } else if (s.contains("additionalProperties")) {
        const auto& extra = s["additionalProperties"];
        if (extra.is_boolean()) {
          if (!extra.get<bool>()) errors.push_back(fmt::format("{}: unknown field", child_path));
        } else {
          check(child, extra, child_path, dialect, errors);
        }
      } else if (dialect == SchemaDialect::Structural && !preserve && s.contains("properties")) {
        errors.push_back(fmt::format("{}: unknown field", child_path));
      }
    }
  }
}

}  // namespace detail

// Every violation, each "<path>: <what is wrong>"; empty when `value` is valid.
inline std::vector<std::string> schema_errors(const nlohmann::json& value,
                                              const nlohmann::json& schema, SchemaDialect dialect) {
  std::vector<std::string> errors;
  detail::check(value, schema, "", dialect, errors);
  return errors;
}

}  // namespace depl::packaging
