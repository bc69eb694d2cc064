// Generates docs/reference.md, the API reference of DependableTrainingJob, from the CRD's
// structural schema, so the reference cannot disagree with what the API server enforces.
// `make reference-docs` writes it with depl-crd-reference; tests/controller/docs_reference_test.cpp
// fails when the checked-in file is stale.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace depl::packaging {

namespace detail {

inline std::string number_text(const nlohmann::json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<long long>(d)))
      return std::to_string(static_cast<long long>(d));
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

inline std::string type_text(const nlohmann::json& s) {
  if (s.value("x-kubernetes-int-or-string", false)) return "quantity (integer or string)";
  const std::string type = s.value("type", "");
  if (type == "array") {
    const auto& items = s.value("items", nlohmann::json::object());
    return "array of " + type_text(items);
  }
  if (type == "object") {
    if (s.contains("additionalProperties") && s["additionalProperties"].is_object())
      return "map of " + type_text(s["additionalProperties"]);
    if (!s.contains("properties")) return "object (free-form)";
    return "object";
  }
  if (type.empty()) return "any";
  return type;
}

inline std::string constraints_text(const nlohmann::json& s) {
  std::vector<std::string> parts;
  if (s.contains("minimum"))
    parts.push_back(fmt::format(
        "{} {}", s.value("exclusiveMinimum", false) ? ">" : ">=", number_text(s["minimum"])));
  if (s.contains("maximum"))
    parts.push_back(fmt::format(
        "{} {}", s.value("exclusiveMaximum", false) ? "<" : "<=", number_text(s["maximum"])));
  if (s.contains("enum")) {
    std::vector<std::string> values;
    for (const auto& e : s["enum"]) values.push_back(fmt::format("`{}`", number_text(e)));
    parts.push_back(fmt::format("one of {}", fmt::join(values, ", ")));
  }
  if (s.contains("minItems"))
    parts.push_back(fmt::format("at least {} item(s)", number_text(s["minItems"])));
  if (s.contains("maxItems"))
    parts.push_back(fmt::format("at most {} item(s)", number_text(s["maxItems"])));
  if (s.contains("minLength"))
    parts.push_back(fmt::format("at least {} character(s)", number_text(s["minLength"])));
  if (s.contains("maxLength"))
    parts.push_back(fmt::format("at most {} character(s)", number_text(s["maxLength"])));
  if (s.contains("format"))
    parts.push_back(fmt::format("format {}", s["format"].get<std::string>()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

inline std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out.push_back(c);
  }
  return out;
}

inline void rows(const nlohmann::json& s, const std::string& path, bool required,
                 std::vector<std::string>& out) {
  std::string def;
  if (s.contains("default"))
    def = fmt::format(
        "`{}`", s["default"].is_string() ? s["default"].get<std::string>() : s["default"].dump());
  out.push_back(fmt::format("| `{}` | {} | {} | {} | {} | {} |", path, type_text(s),
                            required ? "yes" : "", cell(def), cell(constraints_text(s)),
                            cell(s.value("description", ""))));
  const nlohmann::json* object = &s;
  std::string prefix = path;
  if (s.value("type", "") == "array" && s.contains("items")) {
    object = &s["items"];
    prefix = path + "[]";
  }
  if (!object->contains("properties")) return;
  std::vector<std::string> required_names;
  for (const auto& r : object->value("required", nlohmann::json::array()))
    required_names.push_back(r.get<std::string>());
  for (const auto& [name, child] : (*object)["properties"].items()) {
    const bool req =
        std::find(required_names.begin(), required_names.end(), name) != required_names.end();
    rows(child, prefix + "." + name, req, out);
  }
}

}  // namespace detail

// The Markdown reference for a CustomResourceDefinition (its first served version).
inline std::string crd_reference_markdown(const nlohmann::json& crd, const std::string& source) {
  const auto& spec = crd["spec"];
  const auto& names = spec["names"];
  const auto& version = spec["versions"][0];
  const auto& schema = version["schema"]["openAPIV3Schema"];
  std::string md;
  md += fmt::format("# API reference: {} ({}/{})\n\n", names["kind"].get<std::string>(),
                    spec["group"].get<std::string>(), version["name"].get<std::string>());
  md += fmt::format(
      "<!-- Generated from {} by tools/packaging (depl-crd-reference); do not edit.\n"
      "     Regenerate: make reference-docs -->\n\n",
      source);
  md += detail::cell(schema.value("description", "")) + "\n\n";
  std::vector<std::string> shorts;
  for (const auto& s : names.value("shortNames", nlohmann::json::array()))
    shorts.push_back(s.get<std::string>());
  md += "| | |\n|---|---|\n";
  md += fmt::format("| API version | `{}/{}` |\n", spec["group"].get<std::string>(),
                    version["name"].get<std::string>());
  md += fmt::format("| Kind | `{}` |\n", names["kind"].get<std::string>());
  md += fmt::format("| Plural | `{}` |\n", names["plural"].get<std::string>());
  md += fmt::format("| Short names | `{}` |\n", fmt::join(shorts, "`, `"));
  md += fmt::format("| Scope | {} |\n", spec["scope"].get<std::string>());
  md += fmt::format(
      "| Status subresource | {} |\n\n",
      version.value("subresources", nlohmann::json::object()).contains("status") ? "yes" : "no");
  md += "## Columns of `kubectl get`\n\n| Column | Type | From |\n|---|---|---|\n";
  for (const auto& c : version.value("additionalPrinterColumns", nlohmann::json::array()))
    md += fmt::format("| {} | {} | `{}` |\n", c["name"].get<std::string>(),
                      c["type"].get<std::string>(), c["jsonPath"].get<std::string>());
  for (const char* part : {"spec", "status"}) {
    if (!schema["properties"].contains(part)) continue;
    md += fmt::format("\n## `{}`\n\n", part);
    md += "| Field | Type | Required | Default | Constraints | Description |\n";
    md += "|---|---|---|---|---|---|\n";
    std::vector<std::string> out;
    const auto& top = schema["properties"][part];
    const nlohmann::json properties = top.value("properties", nlohmann::json::object());
    for (const auto& [name, child] : properties.items()) {
      bool req = false;
      for (const auto& r : top.value("required", nlohmann::json::array())) req = req || r == name;
      detail::rows(child, std::string(part) + "." + name, req, out);
    }
    for (const auto& row : out) md += row + "\n";
  }
  return md;
}

}  // namespace depl::packaging
