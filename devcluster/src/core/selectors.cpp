// Parsing and matching of label and field selectors (k8s.io/apimachinery labels and fields).
#include "depl/devcluster/selectors.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace depl::devcluster {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Splits on commas outside parentheses.
std::vector<std::string> split_top_level(std::string_view text) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(trim(current));
  return parts;
}

bool valid_key(const std::string& key) {
  if (key.empty() || key.size() > 317) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
           c == '/';
  });
}

bool valid_value(const std::string& value) {
  if (value.size() > 63) return false;
  return std::all_of(value.begin(), value.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

std::string label_of(const nlohmann::json& labels, const std::string& key, bool& present) {
  present = false;
  if (!labels.is_object()) return {};
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return {};
  present = true;
  return it->get<std::string>();
}

// "key in (a, b)" / "key notin (a,b)": nullopt when `part` is not of that form.
std::optional<Expected<LabelSelector::Requirement>> parse_set_requirement(const std::string& part) {
  auto open = part.find('(');
  if (open == std::string::npos) return std::nullopt;
  std::string head = trim(std::string_view(part).substr(0, open));
  auto space = head.find_last_of(" \t");
  if (space == std::string::npos) return std::nullopt;
  std::string op = trim(std::string_view(head).substr(space + 1));
  std::string key = trim(std::string_view(head).substr(0, space));
  if (op != "in" && op != "notin") return std::nullopt;
  if (part.back() != ')') {
    return Expected<LabelSelector::Requirement>(
        error(fmt::format("invalid label selector \"{}\": missing ')'", part)));
  }
  LabelSelector::Requirement req{
      key, op == "in" ? LabelSelector::Op::In : LabelSelector::Op::NotIn, {}};
  std::string inner = part.substr(open + 1, part.size() - open - 2);
  std::size_t start = 0;
  while (start <= inner.size()) {
    auto comma = inner.find(',', start);
    std::string value = trim(std::string_view(inner).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!valid_value(value)) {
      return Expected<LabelSelector::Requirement>(
          error(fmt::format("invalid label selector \"{}\": invalid value \"{}\"", part, value)));
    }
    req.values.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Expected<LabelSelector::Requirement>(std::move(req));
}

}  // namespace

Expected<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  if (trim(text).empty()) return selector;
  for (const std::string& part : split_top_level(text)) {
    if (part.empty())
      return error(fmt::format("invalid label selector \"{}\": empty requirement", text));
    Requirement req;
    if (auto set = parse_set_requirement(part)) {
      if (!*set) return unexpected(set->error());
      req = std::move(set->value());
    } else if (part[0] == '!') {
      req = {trim(std::string_view(part).substr(1)), Op::DoesNotExist, {}};
    } else if (auto pos = part.find("!="); pos != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos)),
             Op::NotEquals,
             {trim(std::string_view(part).substr(pos + 2))}};
    } else if (auto pos2 = part.find("=="); pos2 != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos2)),
             Op::Equals,
             {trim(std::string_view(part).substr(pos2 + 2))}};
    } else if (auto pos3 = part.find('='); pos3 != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos3)),
             Op::Equals,
             {trim(std::string_view(part).substr(pos3 + 1))}};
    } else {
      req = {part, Op::Exists, {}};
    }
    if (!valid_key(req.key)) {
      return error(
          fmt::format("invalid label selector \"{}\": invalid label key \"{}\"", text, req.key));
    }
    for (const auto& v : req.values) {
      if (!valid_value(v)) {
        return error(
            fmt::format("invalid label selector \"{}\": invalid label value \"{}\"", text, v));
      }
    }
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  for (const auto& req : requirements_) {
    bool present = false;
    std::string value = label_of(labels, req.key, present);
    bool in_values =
        present && std::find(req.values.begin(), req.values.end(), value) != req.values.end();
    switch (req.op) {
      case Op::Equals:
      case Op::In:
        if (!in_values) return false;
        break;
      case Op::NotEquals:
      case Op::NotIn:
        if (in_values) return false;
        break;
      case Op::Exists:
        if (!present) return false;
        break;
      case Op::DoesNotExist:
        if (present) return false;
        break;
    }
  }
  return true;
}

Expected<FieldSelector> FieldSelector::parse(std::string_view text) {
  FieldSelector selector;
  if (trim(text).empty()) return selector;
  for (const std::string& part : split_top_level(text)) {
    Requirement req;
    if (auto pos = part.find("!="); pos != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos)), false,
             trim(std::string_view(part).substr(pos + 2))};
    } else if (auto pos2 = part.find("=="); pos2 != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos2)), true,
             trim(std::string_view(part).substr(pos2 + 2))};
    } else if (auto pos3 = part.find('='); pos3 != std::string::npos) {
      req = {trim(std::string_view(part).substr(0, pos3)), true,
             trim(std::string_view(part).substr(pos3 + 1))};
    } else {
      return error(
          fmt::format("invalid field selector \"{}\": \"{}\" is not of the form "
                      "field=value, field==value or field!=value",
                      text, part));
    }
    if (req.field.empty()) {
      return error(fmt::format("invalid field selector \"{}\": empty field name", text));
    }
    selector.requirements_.push_back(std::move(req));
  }
  return selector;
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const auto& req : requirements_) {
    bool equal = field_value(object, req.field) == req.value;
    if (equal != req.equals) return false;
  }
  return true;
}

void FieldSelector::rename_prefix(const std::string& from, const std::string& to) {
  for (auto& req : requirements_) {
    if (req.field.rfind(from, 0) == 0) req.field = to + req.field.substr(from.size());
  }
}

std::string field_value(const nlohmann::json& object, const std::string& dotted_path) {
  const nlohmann::json* node = &object;
  std::size_t start = 0;
  while (start <= dotted_path.size()) {
    auto dot = dotted_path.find('.', start);
    std::string key =
        dotted_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return {};
    auto it = node->find(key);
    if (it == node->end()) return {};
    node = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_null()) return {};
  if (node->is_boolean() || node->is_number()) return node->dump();
  return {};
}

}  // namespace depl::devcluster
