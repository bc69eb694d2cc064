// The schemas of the built-in kinds (devcluster/schemas/builtin_types.yaml, compiled in): the
// fields of each type with their JSON types and protobuf tags. Strict field validation, the
// OpenAPI documents kubectl explain reads and the protobuf decoder all use them, so what explain
// shows is what the server checks. Parsed once; immutable and thread-safe afterwards.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::devcluster {

// A field's type: a scalar (string, integer, int64, number, boolean, bytes, time, microtime,
// quantity, intorstring, json, object), a type of the file (ref), or a list or string-keyed map.
struct SchemaType {
  enum class Kind { Scalar, Ref, Array, Map };
  Kind kind = Kind::Scalar;
  std::string name;                     // Scalar: the scalar; Ref: the type's id
  std::shared_ptr<SchemaType> element;  // Array, Map
};

struct SchemaField {
  std::string name;  // JSON name ("" for an inline field)
  int tag = 0;       // protobuf field number; 0: none
  SchemaType type;
  bool inline_fields = false;  // a Go embedded struct: its fields are this type's
  bool optional = false;       // a scalar whose zero value is a value (a Go pointer)
  std::string description;
};

struct SchemaTypeDef {
  std::string id;            // "PodSpec", "events/Event"
  std::string openapi_name;  // "io.k8s.api.core.v1.PodSpec"
  std::string api_version;   // top-level kinds only: "v1", "apps/v1"
  std::string kind;
  std::string description;
  std::vector<SchemaField> fields;
};

class BuiltinSchemas {
 public:
  // The compiled-in schemas. A malformed schema file is a build defect: it aborts.
  static const BuiltinSchemas& get();

  const SchemaTypeDef* type(const std::string& id) const;
  const SchemaTypeDef* kind(const std::string& api_version, const std::string& kind) const;
  // The field `name` of `type`, looking through inline fields; null when unknown.
  const SchemaField* field(const SchemaTypeDef& type, const std::string& name) const;
  // The field tagged `tag`; null when none.
  const SchemaField* field_by_tag(const SchemaTypeDef& type, int tag) const;
  const std::map<std::string, SchemaTypeDef>& types() const { return types_; }

  // The OpenAPI v3 schema of a type (properties with $ref to other types by openapi_name) and
  // of the types it refers to, added to `schemas` (components.schemas).
  void add_openapi_schemas(const SchemaTypeDef& type, nlohmann::json& schemas) const;

 private:
  std::map<std::string, SchemaTypeDef> types_;
  std::map<std::string, std::string> by_kind_;  // "apiVersion/kind" -> id
};

// The fields of `object` (of `type`) that the schema does not know, as kube-apiserver names
// them ("spec.containers[0].imagez"), in key order; removed from `object` when `prune`.
std::vector<std::string> unknown_fields(const SchemaTypeDef& type, nlohmann::json& object,
                                        bool prune);

}  // namespace depl::devcluster
