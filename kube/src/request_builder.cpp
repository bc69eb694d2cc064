#include "depl/kube/request_builder.hpp"

#include <string>

#include "depl/common/json_dump.hpp"

namespace depl::kube::requests {

namespace {

using nlohmann::json;

Unexpected<ApiError> invalid(std::string message) {
  return unexpected(ApiError::transport(ApiError::kInvalidRequest, std::move(message)));
}

HttpRequest base(std::string method, std::string path) {
  HttpRequest request;
  request.method = std::move(method);
  request.path = std::move(path);
  request.headers.emplace_back("Accept", "application/json");
  return request;
}

// Checks name/namespace for a single-object request.
std::optional<Unexpected<ApiError>> check_object(const ResourceType& type, std::string_view ns,
                                                 std::string_view name, const char* verb) {
  if (name.empty()) return invalid(std::string(verb) + " " + type.resource + ": name is empty");
  if (type.namespaced && ns.empty()) {
    return invalid(std::string(verb) + " " + type.resource + " \"" + std::string(name) +
                   "\": namespace is empty (" + type.kind + " is namespaced)");
  }
  return std::nullopt;
}

void add_write_options(HttpRequest& request, const WriteOptions& options) {
  if (options.dry_run) request.query.emplace_back("dryRun", "All");
  if (!options.field_manager.empty())
    request.query.emplace_back("fieldManager", options.field_manager);
  if (!options.field_validation.empty()) {
    request.query.emplace_back("fieldValidation", options.field_validation);
  }
}

std::string string_at(const json& object, const char* pointer) {
  const json::json_pointer ptr(pointer);
  if (!object.contains(ptr)) return {};
  const json& value = object.at(ptr);
  return value.is_string() ? value.get<std::string>() : std::string();
}

Expected<HttpRequest, ApiError> put(const ResourceType& type, const json& object,
                                    const WriteOptions& options, std::string_view subresource) {
  if (!object.is_object())
    return invalid("replace " + type.resource + ": object is not a JSON object");
  std::string name = string_at(object, "/metadata/name");
  std::string ns = type.namespaced ? string_at(object, "/metadata/namespace") : std::string();
  if (auto bad = check_object(type, ns, name, "replace")) return *bad;
  HttpRequest request = base("PUT", object_path(type, ns, name, subresource));
  request.headers.emplace_back("Content-Type", "application/json");
  add_write_options(request, options);
  request.body = dump_json(object);
  return request;
}

}  // namespace

Expected<HttpRequest, ApiError> get(const ResourceType& type, std::string_view ns,
                                    std::string_view name, const GetOptions& options) {
  if (auto bad = check_object(type, ns, name, "get")) return *bad;
  HttpRequest request = base("GET", object_path(type, ns, name));
  if (!options.resource_version.empty()) {
    request.query.emplace_back("resourceVersion", options.resource_version);
  }
  return request;
}

Expected<HttpRequest, ApiError> list(const ResourceType& type, std::string_view ns,
                                     const ListOptions& options) {
  HttpRequest request = base("GET", collection_path(type, ns));
  if (!options.label_selector.empty())
    request.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty())
    request.query.emplace_back("fieldSelector", options.field_selector);
  if (options.limit) {
    if (*options.limit <= 0) return invalid("list " + type.resource + ": limit must be positive");
    request.query.emplace_back("limit", std::to_string(*options.limit));
  }
  if (!options.continue_token.empty())
    request.query.emplace_back("continue", options.continue_token);
  if (!options.resource_version.empty()) {
    request.query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!options.resource_version_match.empty()) {
    request.query.emplace_back("resourceVersionMatch", options.resource_version_match);
  }
  if (options.timeout_seconds) {
    request.query.emplace_back("timeoutSeconds", std::to_string(*options.timeout_seconds));
  }
  return request;
}

Expected<HttpRequest, ApiError> watch(const ResourceType& type, std::string_view ns,
                                      const WatchOptions& options) {
  HttpRequest request = base("GET", collection_path(type, ns));
  request.query.emplace_back("watch", "1");
  if (!options.label_selector.empty())
    request.query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty())
    request.query.emplace_back("fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) {
    request.query.emplace_back("resourceVersion", options.resource_version);
  }
  if (!options.resource_version_match.empty()) {
    request.query.emplace_back("resourceVersionMatch", options.resource_version_match);
  }
  if (options.allow_bookmarks) request.query.emplace_back("allowWatchBookmarks", "true");
  if (options.send_initial_events) {
    if (options.resource_version_match != "NotOlderThan") {
      return invalid("watch " + type.resource +
                     ": send_initial_events requires resource_version_match NotOlderThan");
    }
    request.query.emplace_back("sendInitialEvents", "true");
  }
  if (options.timeout_seconds) {
    if (*options.timeout_seconds <= 0) {
      return invalid("watch " + type.resource + ": timeout_seconds must be positive");
    }
    request.query.emplace_back("timeoutSeconds", std::to_string(*options.timeout_seconds));
  }
  return request;
}

Expected<HttpRequest, ApiError> create(const ResourceType& type, std::string_view ns,
                                       const json& object, const WriteOptions& options) {
  if (!object.is_object())
    return invalid("create " + type.resource + ": object is not a JSON object");
  std::string namespace_name(ns);
  if (namespace_name.empty() && type.namespaced)
    namespace_name = string_at(object, "/metadata/namespace");
  if (type.namespaced && namespace_name.empty()) {
    return invalid("create " + type.resource + ": namespace is empty (" + type.kind +
                   " is namespaced)");
  }
  HttpRequest request = base("POST", collection_path(type, type.namespaced ? namespace_name : ""));
  request.headers.emplace_back("Content-Type", "application/json");
  add_write_options(request, options);
  request.body = dump_json(object);
  return request;
}

Expected<HttpRequest, ApiError> replace(const ResourceType& type, const json& object,
                                        const WriteOptions& options) {
  return put(type, object, options, "");
}

Expected<HttpRequest, ApiError> replace_status(const ResourceType& type, const json& object,
                                               const WriteOptions& options) {
  return put(type, object, options, "status");
}

Expected<HttpRequest, ApiError> remove(const ResourceType& type, std::string_view ns,
                                       std::string_view name, const DeleteOptions& options) {
  if (auto bad = check_object(type, ns, name, "delete")) return *bad;
  HttpRequest request = base("DELETE", object_path(type, ns, name));
  if (options.grace_period_seconds && *options.grace_period_seconds < 0) {
    return invalid("delete " + type.resource + ": grace_period_seconds must not be negative");
  }
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = options.to_body().dump();
  return request;
}

Expected<HttpRequest, ApiError> patch(const ResourceType& type, std::string_view ns,
                                      std::string_view name, PatchType patch_type,
                                      const json& patch, const PatchOptions& options) {
  if (auto bad = check_object(type, ns, name, "patch")) return *bad;
  if (patch_type == PatchType::Json && !patch.is_array()) {
    return invalid("patch " + type.resource + " \"" + std::string(name) +
                   "\": a JSON patch must be an array of operations");
  }
  if (patch_type != PatchType::Json && !patch.is_object()) {
    return invalid("patch " + type.resource + " \"" + std::string(name) +
                   "\": the patch must be a JSON object");
  }
  if (patch_type == PatchType::Apply && options.field_manager.empty()) {
    return invalid("patch " + type.resource + " \"" + std::string(name) +
                   "\": server-side apply requires a field manager");
  }
  if (options.force && patch_type != PatchType::Apply) {
    return invalid("patch " + type.resource + " \"" + std::string(name) +
                   "\": force is only valid for server-side apply");
  }
  if (!options.subresource.empty() && options.subresource != "status" &&
      options.subresource != "scale") {
    return invalid("patch " + type.resource + ": unsupported subresource \"" + options.subresource +
                   "\"");
  }
  HttpRequest request = base("PATCH", object_path(type, ns, name, options.subresource));
  request.headers.emplace_back("Content-Type", content_type(patch_type));
  if (options.dry_run) request.query.emplace_back("dryRun", "All");
  if (!options.field_manager.empty())
    request.query.emplace_back("fieldManager", options.field_manager);
  if (options.force) request.query.emplace_back("force", "true");
  if (!options.field_validation.empty()) {
    request.query.emplace_back("fieldValidation", options.field_validation);
  }
  // JSON is valid YAML, so an apply patch is sent as JSON too (kubectl does the same).
  request.body = dump_json(patch);
  return request;
}

}  // namespace depl::kube::requests
