#include "server/openapi.hpp"

#include <fmt/format.h>
#include <cstdint>

#include "core/builtin_schemas.hpp"

namespace depl::devcluster {

namespace {

using json = nlohmann::json;

std::string gv_path_of(const ResourceType& t) {
  return t.group.empty() ? "api/" + t.version : "apis/" + t.group + "/" + t.version;
}

// io.k8s.api.core.v1.Pod for built-ins; the reversed group for custom resources, as kube does
// (depl.dev -> dev.depl.v1alpha1.DependableTrainingJob).
std::string schema_name(const ResourceType& t) {
  if (!t.custom) {
    if (const auto* def = BuiltinSchemas::get().kind(t.api_version(), t.kind)) {
      return def->openapi_name;
    }
    std::string group = t.group.empty() ? "core" : t.group.substr(0, t.group.find('.'));
    return "io.k8s.api." + group + "." + t.version + "." + t.kind;
  }
  std::string reversed;
  std::string_view g = t.group;
  while (!g.empty()) {
    const auto dot = g.rfind('.');
    std::string_view part = dot == std::string_view::npos ? g : g.substr(dot + 1);
    if (!reversed.empty()) reversed += '.';
    reversed += part;
    g = dot == std::string_view::npos ? std::string_view() : g.substr(0, dot);
  }
  return reversed + "." + t.version + "." + t.kind;
}

json gvk(const ResourceType& t) {
  return {{"group", t.group}, {"version", t.version}, {"kind", t.kind}};
}

json query_param(const std::string& name, const std::string& type, const std::string& what) {
  return {{"name", name},
          {"in", "query"},
          {"description", what},
          {"schema", {{"type", type}}},
          {"uniqueItems", true}};
}

json path_param(const std::string& name) {
  return {{"name", name},
          {"in", "path"},
          {"required", true},
          {"schema", {{"type", "string"}}},
          {"uniqueItems", true}};
}

json write_params() {
  return json::array(
      {query_param("dryRun", "string", "When present, modifications are not persisted."),
       query_param("fieldManager", "string", "The name of the actor making these changes."),
       query_param("fieldValidation", "string",
                   "Ignore, Warn or Strict: how unknown or duplicate fields are handled.")});
}

json ok_response(const std::string& ref) {
  return {{"200",
           {{"description", "OK"},
            {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}}}};
}

json operation(const std::string& action, const ResourceType& t, const std::string& ref,
               json parameters) {
  const std::string op_kind = t.kind + (t.namespaced ? "Namespaced" : "");
  json op = {{"operationId", action + op_kind},
             {"parameters", std::move(parameters)},
             {"responses", ok_response(ref)},
             {"x-kubernetes-action", action},
             {"x-kubernetes-group-version-kind", gvk(t)}};
  return op;
}

void add_paths(const ResourceType& t, json& paths) {
  const std::string ref = "#/components/schemas/" + schema_name(t);
  if (!t.persisted) {
    // Create-only (reviews): POST to the collection, nothing else.
    std::string base =
        "/" + gv_path_of(t) + (t.namespaced ? "/namespaces/{namespace}/" : "/") + t.plural;
    json post = operation("create", t, ref, write_params());
    post["requestBody"] = {{"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}},
                           {"required", true}};
    json collection = {{"post", std::move(post)}};
    if (t.namespaced) collection["parameters"] = json::array({path_param("namespace")});
    paths[base] = std::move(collection);
    return;
  }
  std::string base = "/";
  base += gv_path_of(t);
  base += t.namespaced ? "/namespaces/{namespace}/" : "/";
  base += t.plural;
  json scope_params = json::array();
  if (t.namespaced) scope_params.push_back(path_param("namespace"));

  json collection = {{"parameters", scope_params}};
  collection["get"] = operation(
      "list", t, ref,
      json::array({query_param("labelSelector", "string", "Selects objects by label."),
                   query_param("fieldSelector", "string", "Selects objects by field."),
                   query_param("limit", "integer", "Maximum number of items."),
                   query_param("continue", "string", "Continue token of a previous page."),
                   query_param("watch", "boolean", "Watch for changes.")}));
  collection["post"] = operation("post", t, ref, write_params());
  collection["post"]["requestBody"] = {
      {"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}}, {"required", true}};
  paths[base] = std::move(collection);

  json item_params = scope_params;
  item_params.push_back(path_param("name"));
  json item = {{"parameters", item_params}};
  item["get"] = operation("get", t, ref, json::array());
  item["put"] = operation("put", t, ref, write_params());
  item["put"]["requestBody"] = {{"content", {{"application/json", {{"schema", {{"$ref", ref}}}}}}},
                                {"required", true}};
  json patch_params = write_params();
  patch_params.push_back(query_param("force", "boolean", "Force apply requests."));
  item["patch"] = operation("patch", t, ref, std::move(patch_params));
  const json patch_schema = {
      {"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}};
  item["patch"]["requestBody"] = {{"content",
                                   {{"application/json-patch+json", {{"schema", patch_schema}}},
                                    {"application/merge-patch+json", {{"schema", patch_schema}}},
                                    {"application/apply-patch+yaml", {{"schema", patch_schema}}}}},
                                  {"required", true}};
  item["delete"] = operation("delete", t, ref,
                             json::array({query_param("propagationPolicy", "string",
                                                      "Orphan, Background or Foreground.")}));
  paths[base + "/{name}"] = item;
  if (t.has_status_subresource) {
    json status = item;
    status.erase("delete");
    paths[base + "/{name}/status"] = std::move(status);
  }
}

json kind_schema(const ResourceType& t) {
  json schema;
  if (t.schema && t.schema->is_object()) {
    schema = *t.schema;
  } else {
    schema = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  }
  if (!schema.contains("description")) {
    schema["description"] = t.kind + " (" + t.api_version() + ")";
  }
  json& props = schema["properties"];
  if (!props.is_object()) props = json::object();
  props["apiVersion"] = {{"type", "string"},
                         {"description",
                          "APIVersion defines the versioned schema of this "
                          "representation of an object."}};
  props["kind"] = {{"type", "string"},
                   {"description", "Kind is a string value representing the REST resource."}};
  props["metadata"] = {
      {"description", "Standard object's metadata."},
      {"allOf",
       {{{"$ref", "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}}}}};
  schema["type"] = "object";
  schema["x-kubernetes-group-version-kind"] = json::array({gvk(t)});
  return schema;
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::optional<json> openapi_v3_document(const std::vector<ResourceType>& types,
                                        const std::string& gv_path) {
  json paths = json::object();
  json schemas = {
      {"io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
       {{"type", "object"},
        {"description", "Patch is provided to give a concrete name and type to the patch body."}}},
      {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
       {{"type", "object"},
        {"description", "ObjectMeta is metadata that all persisted resources must have."},
        {"x-kubernetes-preserve-unknown-fields", true}}}};
  bool found = false;
  const BuiltinSchemas& builtin = BuiltinSchemas::get();
  for (const auto& t : types) {
    if (gv_path_of(t) != gv_path) continue;
    found = true;
    add_paths(t, paths);
    // A built-in kind's schema is the one its writes are checked against.
    const SchemaTypeDef* def = t.custom ? nullptr : builtin.kind(t.api_version(), t.kind);
    if (def) {
      const std::string meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
      if (schemas[meta].contains("x-kubernetes-preserve-unknown-fields")) schemas.erase(meta);
      builtin.add_openapi_schemas(*def, schemas);
    } else {
      schemas[schema_name(t)] = kind_schema(t);
    }
  }
  if (!found) return std::nullopt;
  return json{{"openapi", "3.0.0"},
              {"info", {{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
              {"paths", std::move(paths)},
              {"components", {{"schemas", std::move(schemas)}}}};
}

json openapi_v3_index(const std::vector<ResourceType>& types) {
  json paths = json::object();
  for (const auto& t : types) {
    const std::string p = gv_path_of(t);
    if (paths.contains(p)) continue;
    const auto doc = openapi_v3_document(types, p);
    paths[p] = {
        {"serverRelativeURL", fmt::format("/openapi/v3/{}?hash={:016X}", p, fnv1a(doc->dump()))}};
  }
  return {{"paths", std::move(paths)}};
}

}  // namespace depl::devcluster
