#include "builtin_schemas.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>

#include <fmt/format.h>

#include "depl/common/yaml_json.hpp"

namespace depl::devcluster {

extern const char* const kBuiltinSchemaText;

namespace {

using nlohmann::json;

const std::map<std::string, std::string>& openapi_prefixes() {
  static const std::map<std::string, std::string> prefixes = {
      {"meta", "io.k8s.apimachinery.pkg.apis.meta.v1."},
      {"core", "io.k8s.api.core.v1."},
      {"apps", "io.k8s.api.apps.v1."},
      {"rbac", "io.k8s.api.rbac.v1."},
      {"coordination", "io.k8s.api.coordination.v1."},
      {"events", "io.k8s.api.events.v1."},
      {"authentication", "io.k8s.api.authentication.v1."},
      {"authorization", "io.k8s.api.authorization.v1."},
      {"scheduling", "io.k8s.api.scheduling.v1beta1."},
      {"apiextensions", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."}};
  return prefixes;
}

const std::vector<std::string>& scalars() {
  static const std::vector<std::string> names = {"string",   "integer",     "int64", "number",
                                                 "boolean",  "bytes",       "time",  "microtime",
                                                 "quantity", "intorstring", "json",  "object"};
  return names;
}

[[noreturn]] void defect(const std::string& what) {
  std::cerr << "devcluster: the built-in schemas are malformed: " << what << "\n";
  std::abort();
}

SchemaType parse_type(const std::string& text, const std::string& where) {
  SchemaType t;
  if (text.rfind("[]", 0) == 0) {
    t.kind = SchemaType::Kind::Array;
    t.element = std::make_shared<SchemaType>(parse_type(text.substr(2), where));
  } else if (text.rfind("map[", 0) == 0 && text.back() == ']') {
    t.kind = SchemaType::Kind::Map;
    t.element = std::make_shared<SchemaType>(parse_type(text.substr(4, text.size() - 5), where));
  } else if (std::find(scalars().begin(), scalars().end(), text) != scalars().end()) {
    t.name = text;
  } else if (!text.empty()) {
    t.kind = SchemaType::Kind::Ref;
    t.name = text;
  } else {
    defect(where + ": no type");
  }
  return t;
}

// "<tag> [inline] <type> [| description]"
SchemaField parse_field(const std::string& name, const std::string& spec,
                        const std::string& where) {
  SchemaField f;
  f.name = name;
  std::string head = spec;
  const auto bar = spec.find(" | ");
  if (bar != std::string::npos) {
    head = spec.substr(0, bar);
    f.description = spec.substr(bar + 3);
  }
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < head.size()) {
    auto end = head.find(' ', start);
    if (end == std::string::npos) end = head.size();
    if (end > start) words.push_back(head.substr(start, end - start));
    start = end + 1;
  }
  if (words.size() < 2) defect(where + ": expected \"<tag> <type>\"");
  if (words[0] != "-") {
    char* end = nullptr;
    f.tag = static_cast<int>(std::strtol(words[0].c_str(), &end, 10));
    if (!end || *end || f.tag <= 0) defect(where + ": bad tag " + words[0]);
  }
  std::size_t type_word = 1;
  if (words[1] == "inline") {
    f.inline_fields = true;
    type_word = 2;
    if (words.size() < 3) defect(where + ": inline without a type");
  }
  std::string type = words[type_word];
  if (!type.empty() && type.back() == '?') {
    f.optional = true;
    type.pop_back();
  }
  f.type = parse_type(type, where);
  return f;
}

void check_refs(const SchemaType& t, const std::map<std::string, SchemaTypeDef>& types,
                const std::string& where) {
  if (t.kind == SchemaType::Kind::Ref && !types.count(t.name))
    defect(where + ": unknown type " + t.name);
  if (t.element) check_refs(*t.element, types, where);
}

json scalar_schema(const std::string& scalar) {
  if (scalar == "string") return {{"type", "string"}};
  if (scalar == "integer") return {{"type", "integer"}, {"format", "int32"}};
  if (scalar == "int64") return {{"type", "integer"}, {"format", "int64"}};
  if (scalar == "number") return {{"type", "number"}, {"format", "double"}};
  if (scalar == "boolean") return {{"type", "boolean"}};
  if (scalar == "bytes") return {{"type", "string"}, {"format", "byte"}};
  if (scalar == "time" || scalar == "microtime")
    return {{"type", "string"}, {"format", "date-time"}};
  if (scalar == "quantity") {
    return {{"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}};
  }
  if (scalar == "intorstring") {
    return {{"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}};
  }
  if (scalar == "json") return {{"x-kubernetes-preserve-unknown-fields", true}};
  return {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
}

void collect_fields(const BuiltinSchemas& schemas, const SchemaTypeDef& type,
                    std::vector<const SchemaField*>& out) {
  for (const auto& f : type.fields) {
    if (f.inline_fields) {
      if (const auto* inner = schemas.type(f.type.name)) collect_fields(schemas, *inner, out);
    } else {
      out.push_back(&f);
    }
  }
}

void walk(const BuiltinSchemas& schemas, const SchemaType& type, json& value,
          const std::string& path, bool prune, std::vector<std::string>& unknown);

void walk_object(const BuiltinSchemas& schemas, const SchemaTypeDef& def, json& object,
                 const std::string& path, bool prune, std::vector<std::string>& unknown) {
  if (!object.is_object()) return;
  std::vector<std::string> drop;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string field_path = path.empty() ? it.key() : path + "." + it.key();
    const SchemaField* field = schemas.field(def, it.key());
    if (!field) {
      unknown.push_back(field_path);
      drop.push_back(it.key());
      continue;
    }
    walk(schemas, field->type, it.value(), field_path, prune, unknown);
  }
  if (prune) {
    for (const auto& key : drop) object.erase(key);
  }
}

void walk(const BuiltinSchemas& schemas, const SchemaType& type, json& value,
          const std::string& path, bool prune, std::vector<std::string>& unknown) {
  switch (type.kind) {
    case SchemaType::Kind::Scalar:
      return;
    case SchemaType::Kind::Ref:
      if (const auto* def = schemas.type(type.name)) {
        walk_object(schemas, *def, value, path, prune, unknown);
      }
      return;
    case SchemaType::Kind::Array:
      if (!value.is_array()) return;
      for (std::size_t i = 0; i < value.size(); ++i) {
        walk(schemas, *type.element, value[i], fmt::format("{}[{}]", path, i), prune, unknown);
      }
      return;
    case SchemaType::Kind::Map:
      if (!value.is_object()) return;
      for (auto it = value.begin(); it != value.end(); ++it) {
        walk(schemas, *type.element, it.value(), fmt::format("{}[{}]", path, it.key()), prune,
             unknown);
      }
      return;
  }
}

}  // namespace

const BuiltinSchemas& BuiltinSchemas::get() {
  static const BuiltinSchemas schemas = [] {
    BuiltinSchemas s;
    auto doc = yaml_to_json(kBuiltinSchemaText, "builtin_types.yaml");
    if (!doc || !doc->is_object()) defect(doc ? "not a map" : doc.error().message);
    for (const auto& [id, entry] : doc->items()) {
      SchemaTypeDef def;
      def.id = id;
      const std::string group = entry.value("group", "");
      auto prefix = openapi_prefixes().find(group);
      if (prefix == openapi_prefixes().end()) defect(id + ": unknown group " + group);
      def.openapi_name = prefix->second + id.substr(id.find('/') + 1);
      def.description = entry.value("description", "");
      const std::string kind = entry.value("kind", "");
      if (!kind.empty()) {
        const auto slash = kind.rfind('/');
        def.api_version = kind.substr(0, slash);
        def.kind = kind.substr(slash + 1);
        s.by_kind_[kind] = id;
      }
      const json fields = entry.value("fields", json::object());
      for (const auto& [name, spec] : fields.items()) {
        if (!spec.is_string()) defect(id + "." + name + ": not a string");
        def.fields.push_back(parse_field(name, spec.get<std::string>(), id + "." + name));
      }
      s.types_[id] = std::move(def);
    }
    for (const auto& [id, def] : s.types_) {
      for (const auto& f : def.fields) check_refs(f.type, s.types_, id + "." + f.name);
    }
    return s;
  }();
  return schemas;
}

const SchemaTypeDef* BuiltinSchemas::type(const std::string& id) const {
  auto it = types_.find(id);
  return it == types_.end() ? nullptr : &it->second;
}

const SchemaTypeDef* BuiltinSchemas::kind(const std::string& api_version,
                                          const std::string& kind) const {
  auto it = by_kind_.find(api_version + "/" + kind);
  return it == by_kind_.end() ? nullptr : type(it->second);
}

const SchemaField* BuiltinSchemas::field(const SchemaTypeDef& def, const std::string& name) const {
  for (const auto& f : def.fields) {
    if (f.inline_fields) {
      if (const auto* inner = type(f.type.name)) {
        if (const auto* found = field(*inner, name)) return found;
      }
    } else if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

const SchemaField* BuiltinSchemas::field_by_tag(const SchemaTypeDef& def, int tag) const {
  for (const auto& f : def.fields) {
    if (f.tag == tag) return &f;
  }
  return nullptr;
}

void BuiltinSchemas::add_openapi_schemas(const SchemaTypeDef& root, json& schemas) const {
  std::vector<const SchemaTypeDef*> pending = {&root};
  schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {
      {"type", "string"},
      {"description", "A fixed-point number: 100m, 1.5, 2Gi, 10G (a number is accepted too)."}};
  schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
      {"type", "string"},
      {"format", "int-or-string"},
      {"x-kubernetes-int-or-string", true},
      {"description", "An integer or a string."}};
  while (!pending.empty()) {
    const SchemaTypeDef* def = pending.back();
    pending.pop_back();
    if (schemas.contains(def->openapi_name)) continue;
    json properties = json::object();
    std::vector<const SchemaField*> fields;
    collect_fields(*this, *def, fields);
    for (const SchemaField* f : fields) {
      std::function<json(const SchemaType&)> schema_of = [&](const SchemaType& t) -> json {
        switch (t.kind) {
          case SchemaType::Kind::Scalar:
            return scalar_schema(t.name);
          case SchemaType::Kind::Ref: {
            const SchemaTypeDef* target = type(t.name);
            pending.push_back(target);
            return {{"$ref", "#/components/schemas/" + target->openapi_name}};
          }
          case SchemaType::Kind::Array:
            return {{"type", "array"}, {"items", schema_of(*t.element)}};
          case SchemaType::Kind::Map:
            return {{"type", "object"}, {"additionalProperties", schema_of(*t.element)}};
        }
        return json::object();
      };
      json property = schema_of(f->type);
      if (property.contains("$ref")) {
        // As kube-apiserver publishes a referenced type with a description of its own.
        property = {{"allOf", json::array({property})}};
      }
      if (!f->description.empty()) property["description"] = f->description;
      properties[f->name] = std::move(property);
    }
    json schema = {{"type", "object"}, {"properties", std::move(properties)}};
    if (!def->description.empty()) schema["description"] = def->description;
    if (!def->kind.empty()) {
      const auto slash = def->api_version.find('/');
      schema["x-kubernetes-group-version-kind"] = json::array(
          {{{"group", slash == std::string::npos ? "" : def->api_version.substr(0, slash)},
            {"version",
             slash == std::string::npos ? def->api_version : def->api_version.substr(slash + 1)},
            {"kind", def->kind}}});
    }
    schemas[def->openapi_name] = std::move(schema);
  }
}

std::vector<std::string> unknown_fields(const SchemaTypeDef& type, json& object, bool prune) {
  std::vector<std::string> unknown;
  walk_object(BuiltinSchemas::get(), type, object, "", prune, unknown);
  return unknown;
}

}  // namespace depl::devcluster
