// Structural schemas (apiextensions-apiserver): defaulting, pruning and validation. Supported:
// type, properties, required, enum, minimum/maximum (+exclusive), minLength/maxLength, pattern,
// minItems/maxItems, items, additionalProperties, nullable, x-kubernetes-preserve-unknown-fields,
// x-kubernetes-int-or-string. Not supported: allOf/anyOf/oneOf/not, CEL rules, formats.
#include "depl/devcluster/structural_schema.hpp"

#include <cmath>
#include <regex>

#include <fmt/format.h>

#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

bool is_root_meta(const std::string& path, const std::string& key) {
  return path.empty() && (key == "metadata" || key == "apiVersion" || key == "kind");
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool preserves_unknown(const json& schema) {
  return schema.value("x-kubernetes-preserve-unknown-fields", false);
}

// Whether default_node would fill in anything below `value`.
bool lacks_defaults(const json& value, const json& schema) {
  if (!schema.is_object()) return false;
  if (value.is_object()) {
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        auto member = value.find(it.key());
        if (member == value.end() ? it->contains("default") : lacks_defaults(*member, *it)) {
          return true;
        }
      }
    }
    if (auto extra = schema.find("additionalProperties");
        extra != schema.end() && extra->is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (schema.contains("properties") && schema["properties"].contains(it.key())) continue;
        if (lacks_defaults(*it, *extra)) return true;
      }
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (const auto& item : value) {
        if (lacks_defaults(item, *items)) return true;
      }
    }
  }
  return false;
}

void default_node(json& value, const json& schema) {
  if (!schema.is_object()) return;
  if (value.is_object()) {
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      for (auto it = props->begin(); it != props->end(); ++it) {
        if (!value.contains(it.key()) && it->contains("default")) {
          value[it.key()] = (*it)["default"];
        }
        if (value.contains(it.key())) default_node(value[it.key()], *it);
      }
    }
    if (auto extra = schema.find("additionalProperties");
        extra != schema.end() && extra->is_object()) {
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (schema.contains("properties") && schema["properties"].contains(it.key())) continue;
        default_node(*it, *extra);
      }
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (auto& item : value) default_node(item, *items);
    }
  }
}

void prune_node(json& value, const json& schema, const std::string& path,
                std::vector<std::string>& removed) {
  if (!schema.is_object()) return;
  if (value.is_object()) {
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    const json* extra = nullptr;
    if (auto it = schema.find("additionalProperties"); it != schema.end() && it->is_object()) {
      extra = &*it;
    }
    bool keep_unknown = preserves_unknown(schema) || (schema.contains("additionalProperties") &&
                                                      schema["additionalProperties"].is_boolean() &&
                                                      schema["additionalProperties"].get<bool>());
    for (auto it = value.begin(); it != value.end();) {
      if (is_root_meta(path, it.key())) {
        ++it;
        continue;
      }
      std::string sub = join(path, it.key());
      if (props && props->contains(it.key())) {
        prune_node(*it, (*props)[it.key()], sub, removed);
        ++it;
      } else if (extra) {
        prune_node(*it, *extra, sub, removed);
        ++it;
      } else if (keep_unknown) {
        ++it;
      } else {
        removed.push_back(sub);
        it = value.erase(it);
      }
    }
  } else if (value.is_array()) {
    if (auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        prune_node(value[i], *items, fmt::format("{}[{}]", path, i), removed);
      }
    }
  }
}

std::string type_of(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "integer";
  if (value.is_number_float()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "array";
  return "object";
}

// The value as the apiserver prints it in "Invalid value: X".
std::string shown(const json& value) {
  if (value.is_object()) return "\"object\"";
  if (value.is_array()) return "\"array\"";
  return value.dump();
}

std::string number_text(const json& n) {
  return n.dump();
}

bool type_matches(const std::string& type, const json& value) {
  if (type.empty()) return true;
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer() || value.is_number_unsigned()) return true;
    if (value.is_number_float()) {
      double d = value.get<double>();
      return std::isfinite(d) && std::floor(d) == d;
    }
  }
  return false;
}

class Validator {
 public:
  std::vector<FieldError> errors;

  void validate(const json& value, const json& schema, const std::string& path) {
    if (!schema.is_object()) return;
    if (value.is_null()) {
      if (schema.value("nullable", false)) return;
      std::string type = schema.value("type", "");
      if (!type.empty()) {
        invalid(path, value, fmt::format("{} in body must be of type {}: \"null\"", path, type));
      }
      return;
    }
    if (schema.value("x-kubernetes-int-or-string", false)) {
      if (!value.is_string() && !type_matches("integer", value)) {
        invalid(
            path, value,
            fmt::format("{} in body must be of type integer,string: \"{}\"", path, type_of(value)));
        return;
      }
    } else {
      std::string type = schema.value("type", "");
      if (!type_matches(type, value)) {
        invalid(path, value,
                fmt::format("{} in body must be of type {}: \"{}\"", path, type, type_of(value)));
        return;
      }
    }
    if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
      bool found = false;
      std::string supported;
      for (const auto& option : *e) {
        if (option == value) found = true;
        if (!supported.empty()) supported += ", ";
        supported += option.dump();
      }
      if (!found) {
        errors.push_back(
            {"FieldValueNotSupported", path,
             fmt::format("Unsupported value: {}: supported values: {}", shown(value), supported)});
      }
    }
    if (value.is_number()) check_number(value, schema, path);
    if (value.is_string()) check_string(value, schema, path);
    if (value.is_array()) check_array(value, schema, path);
    if (value.is_object()) check_object(value, schema, path);
  }

 private:
  void invalid(const std::string& path, const json& value, const std::string& detail) {
    errors.push_back(
        {"FieldValueInvalid", path, fmt::format("Invalid value: {}: {}", shown(value), detail)});
  }

  void check_number(const json& value, const json& schema, const std::string& path) {
    double v = value.get<double>();
    if (auto max = schema.find("maximum"); max != schema.end() && max->is_number()) {
      bool exclusive = schema.value("exclusiveMaximum", false);
      double m = max->get<double>();
      if (exclusive ? !(v < m) : !(v <= m)) {
        invalid(path, value,
                fmt::format("{} in body should be less than {}{}", path,
                            exclusive ? "" : "or equal to ", number_text(*max)));
      }
    }
    if (auto min = schema.find("minimum"); min != schema.end() && min->is_number()) {
      bool exclusive = schema.value("exclusiveMinimum", false);
      double m = min->get<double>();
      if (exclusive ? !(v > m) : !(v >= m)) {
        invalid(path, value,
                fmt::format("{} in body should be greater than {}{}", path,
                            exclusive ? "" : "or equal to ", number_text(*min)));
      }
    }
    if (auto mult = schema.find("multipleOf"); mult != schema.end() && mult->is_number()) {
      double m = mult->get<double>();
      if (m > 0 && std::fmod(v, m) != 0) {
        invalid(path, value,
                fmt::format("{} in body should be a multiple of {}", path, number_text(*mult)));
      }
    }
  }

  void check_string(const json& value, const json& schema, const std::string& path) {
    const std::string& s = value.get_ref<const std::string&>();
    // Lengths count characters (code points), not bytes.
    std::size_t length = 0;
    for (unsigned char c : s) length += (c & 0xC0) != 0x80;
    if (auto max = schema.find("maxLength"); max != schema.end() && max->is_number()) {
      if (length > max->get<std::size_t>()) {
        errors.push_back({"FieldValueTooLong", path,
                          fmt::format("Too long: may not be longer than {}", max->dump())});
      }
    }
    if (auto min = schema.find("minLength"); min != schema.end() && min->is_number()) {
      if (length < min->get<std::size_t>()) {
        invalid(path, value,
                fmt::format("{} in body should be at least {} chars long", path, min->dump()));
      }
    }
    if (auto pattern = schema.find("pattern"); pattern != schema.end() && pattern->is_string()) {
      try {
        std::regex re(pattern->get<std::string>(), std::regex::ECMAScript);
        if (!std::regex_search(s, re)) {
          invalid(path, value,
                  fmt::format("{} in body should match '{}'", path, pattern->get<std::string>()));
        }
      } catch (const std::regex_error&) {
        invalid(path, value,
                fmt::format("{}: the schema's pattern '{}' is not a valid regular expression", path,
                            pattern->get<std::string>()));
      }
    }
  }

  void check_array(const json& value, const json& schema, const std::string& path) {
    if (auto max = schema.find("maxItems"); max != schema.end() && max->is_number()) {
      if (value.size() > max->get<std::size_t>()) {
        errors.push_back(
            {"FieldValueTooMany", path,
             fmt::format("Too many: {}: must have at most {} items", value.size(), max->dump())});
      }
    }
    if (auto min = schema.find("minItems"); min != schema.end() && min->is_number()) {
      if (value.size() < min->get<std::size_t>()) {
        invalid(path, value,
                fmt::format("{} in body should have at least {} items", path, min->dump()));
      }
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i) {
        validate(value[i], *items, fmt::format("{}[{}]", path, i));
      }
    }
  }

  void check_object(const json& value, const json& schema, const std::string& path) {
    if (auto required = schema.find("required"); required != schema.end() && required->is_array()) {
      for (const auto& name : *required) {
        if (!name.is_string()) continue;
        std::string key = name.get<std::string>();
        if (is_root_meta(path, key)) continue;
        if (!value.contains(key)) {
          errors.push_back({"FieldValueRequired", join(path, key), "Required value"});
        }
      }
    }
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    const json* extra = nullptr;
    if (auto it = schema.find("additionalProperties"); it != schema.end() && it->is_object()) {
      extra = &*it;
    }
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (is_root_meta(path, it.key())) continue;
      std::string sub = join(path, it.key());
      if (props && props->contains(it.key())) {
        validate(*it, (*props)[it.key()], sub);
      } else if (extra) {
        validate(*it, *extra, sub);
      }
    }
    if (auto max = schema.find("maxProperties"); max != schema.end() && max->is_number()) {
      if (value.size() > max->get<std::size_t>()) {
        errors.push_back(
            {"FieldValueTooMany", path,
             fmt::format("Too many: {}: must have at most {} items", value.size(), max->dump())});
      }
    }
  }
};

}  // namespace

void apply_schema_defaults(json& object, const json& schema) {
  default_node(object, schema);
}

bool lacks_schema_defaults(const json& object, const json& schema) {
  return lacks_defaults(object, schema);
}

std::vector<std::string> prune_unknown_fields(json& object, const json& schema) {
  std::vector<std::string> removed;
  prune_node(object, schema, "", removed);
  return removed;
}

std::vector<FieldError> validate_against_schema(const json& object, const json& schema) {
  Validator validator;
  if (!object.is_object()) {
    validator.errors.push_back(
        {"FieldValueInvalid", "", "Invalid value: the object must be a JSON object"});
    return validator.errors;
  }
  validator.validate(object, schema, "");
  return validator.errors;
}

}  // namespace depl::devcluster
