// Create, update (PUT, including /status), patch (merge, JSON, strategic, apply) and the rules
// every write follows: resourceVersion checks, generation, status subresource, finalizers,
// managedFields, admission of custom resources and CRD registration.
#include <fmt/format.h>

#include "builtin_schemas.hpp"
#include "builtin_types.hpp"
#include "builtin_validation.hpp"
#include "depl/common/base64.hpp"
#include "depl/common/kubernetes_names.hpp"
#include "depl/devcluster/patches.hpp"
#include "depl/devcluster/server_side_apply.hpp"
#include "depl/devcluster/structural_schema.hpp"
#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

// RBAC objects' names need only be path segments ("system:discovery"): no '/' or '%', not "." or
// "..".
std::optional<std::string> path_segment_problem(const std::string& name) {
  if (name == "." || name == "..") return "may not be '" + name + "'";
  if (name.find('/') != std::string::npos) return "may not contain '/'";
  if (name.find('%') != std::string::npos) return "may not contain '%'";
  return std::nullopt;
}

// An object name as kube-apiserver checks most kinds': a DNS-1123 subdomain.
std::optional<std::string> name_problem(const std::string& name) {
  if (name.size() > 253) return "must be no more than 253 characters";
  if (!is_dns1123_subdomain(name)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
           "'-' or '.', and must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  }
  return std::nullopt;
}

// Whether two objects have the same members apart from those `ignored` names, comparing the
// others with `same(key, a_value, b_value)`. Members come in key order in both objects.
template <typename Ignored, typename Same>
bool same_members(const json& a, const json& b, Ignored ignored, Same same) {
  auto ai = a.begin();
  auto bi = b.begin();
  while (true) {
    while (ai != a.end() && ignored(ai.key())) ++ai;
    while (bi != b.end() && ignored(bi.key())) ++bi;
    if (ai == a.end() || bi == b.end()) return ai == a.end() && bi == b.end();
    if (ai.key() != bi.key() || !same(ai.key(), *ai, *bi)) return false;
    ++ai;
    ++bi;
  }
}

bool equal_values(const std::string&, const json& a, const json& b) {
  return a == b;
}

// Whether the fields a generation counts (all but metadata, and status when the type has a status
// subresource) are the same in both objects.
bool same_spec(const json& a, const json& b, bool has_status) {
  return same_members(
      a, b,
      [&](const std::string& key) { return key == "metadata" || (has_status && key == "status"); },
      equal_values);
}

// For no-op detection: whether two objects are equal apart from bookkeeping that changes on every
// write (metadata.resourceVersion; the time of each managedFields entry: the entries themselves
// count, a request may rewrite them).
bool same_apart_from_bookkeeping(const json& a, const json& b) {
  auto same_entries = [](const json& x, const json& y) {
    if (!x.is_array() || !y.is_array() || x.size() != y.size()) return x == y;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!x[i].is_object() || !y[i].is_object()) {
        if (x[i] != y[i]) return false;
      } else if (!same_members(
                     x[i], y[i], [](const std::string& key) { return key == "time"; },
                     equal_values)) {
        return false;
      }
    }
    return true;
  };
  auto same_metadata = [&](const json& x, const json& y) {
    if (!x.is_object() || !y.is_object()) return x == y;
    return same_members(
        x, y, [](const std::string& key) { return key == "resourceVersion"; },
        [&](const std::string& key, const json& u, const json& v) {
          return key == "managedFields" ? same_entries(u, v) : u == v;
        });
  };
  if (!a.is_object() || !b.is_object()) return a == b;
  return same_members(
      a, b, [](const std::string&) { return false; },
      [&](const std::string& key, const json& x, const json& y) {
        return key == "metadata" ? same_metadata(x, y) : x == y;
      });
}

// Sets `object`'s member `key` to `value`, copying only when they differ (comparing allocates
// nothing; a write usually leaves most of an object as it was).
void assign_member(json& object, const std::string& key, const json& value) {
  auto it = object.find(key);
  if (it == object.end() || *it != value) object[key] = value;
}

ApplyContext apply_context(const ResourceType& type, bool status_endpoint) {
  ApplyContext context;
  context.builtin = !type.custom;
  context.schema = type.schema ? &*type.schema : nullptr;
  context.has_status_subresource = type.has_status_subresource;
  context.status_endpoint = status_endpoint;
  return context;
}

std::set<std::string> finalizers_of(const json& object) {
  std::set<std::string> out;
  for (const auto& f : object.value("/metadata/finalizers"_json_pointer, json::array())) {
    if (f.is_string()) out.insert(f.get<std::string>());
  }
  return out;
}

}  // namespace

std::optional<ApiResult> check_kind(const std::string& expected_api_version,
                                    const std::string& expected_kind, json& body) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object");
  std::string api_version = body.value("apiVersion", "");
  std::string kind = body.value("kind", "");
  if (api_version.empty()) body["apiVersion"] = expected_api_version;
  if (kind.empty()) body["kind"] = expected_kind;
  if (!api_version.empty() && api_version != expected_api_version) {
    return bad_request(
        fmt::format("the API version in the data ({}) does not match the expected API version ({})",
                    api_version, expected_api_version));
  }
  if (!kind.empty() && kind != expected_kind) {
    return bad_request(fmt::format(
        "the kind in the data ({}) does not match the expected kind ({})", kind, expected_kind));
  }
  if (!body.contains("metadata")) body["metadata"] = json::object();
  if (!body["metadata"].is_object()) return bad_request("metadata must be an object");
  return std::nullopt;
}

namespace {

// fieldValidation's answer to the unknown and duplicate fields of a request: a 400 with Strict,
// warnings with Warn (the default), nothing with Ignore.
std::optional<ApiResult> field_validation(const WriteOptions& options,
                                          const std::vector<std::string>& unknown,
                                          std::vector<std::string>& warnings) {
  std::vector<std::string> problems;
  for (const auto& field : unknown) problems.push_back(fmt::format("unknown field \"{}\"", field));
  for (const auto& field : options.duplicate_fields) {
    problems.push_back(fmt::format("duplicate field \"{}\"", field));
  }
  if (problems.empty()) return std::nullopt;
  if (options.field_validation == "Strict") {
    std::string message = "strict decoding error: ";
    for (std::size_t i = 0; i < problems.size(); ++i) {
      message += (i ? ", " : "") + problems[i];
    }
    return bad_request(message);
  }
  if (options.field_validation != "Ignore") {
    warnings.insert(warnings.end(), problems.begin(), problems.end());
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiResult> ApiStore::Impl::admit(const ResourceType& type, json& object,
                                               const WriteOptions& options,
                                               std::vector<std::string>& warnings,
                                               const json* old) {
  static const json::json_pointer kName("/metadata/name");
  std::string name = object.value(kName, std::string());
  if (type.group.empty() && type.plural == "secrets" && object.contains("stringData")) {
    if (object["stringData"].is_object()) {
      for (auto& [k, v] : object["stringData"].items()) {
        if (v.is_string()) object["data"][k] = depl::base64_encode(v.get<std::string>());
      }
    }
    object.erase("stringData");
  }
  if (type.plural == "customresourcedefinitions" && type.group == "apiextensions.k8s.io") {
    auto types = resource_types_from_crd(object);
    if (!types) return invalid(type.qualified_kind(), name, type.kind, type.group, types.error());
    return std::nullopt;
  }
  if (!type.custom) {
    // The built-in kinds are decoded into their types: fields the schema lacks are dropped.
    std::vector<std::string> unknown;
    if (const auto* schema = BuiltinSchemas::get().kind(type.api_version(), type.kind)) {
      unknown = unknown_fields(*schema, object, true);
    }
    if (auto refused = field_validation(options, unknown, warnings)) return refused;
    if (auto problem = validate_builtin_object(type, object, old == nullptr)) return problem;
    if (old) return validate_builtin_update(type, *old, object);
    return std::nullopt;
  }
  if (!type.schema) return std::nullopt;
  std::vector<std::string> unknown = prune_unknown_fields(object, *type.schema);
  if (auto refused = field_validation(options, unknown, warnings)) return refused;
  apply_schema_defaults(object, *type.schema);
  std::vector<FieldError> errors = validate_against_schema(object, *type.schema);
  if (!errors.empty()) return invalid(type.qualified_kind(), name, type.kind, type.group, errors);
  return std::nullopt;
}

std::optional<ApiResult> ApiStore::Impl::refuse_create(const ResourceType& type,
                                                       const ResourceRef& ref,
                                                       const std::string& name,
                                                       const std::string& key) const {
  if (type.namespaced) {
    ObjectPtr ns = lookup("/namespaces", object_key("", ref.ns));
    if (!ns) return not_found("namespaces", ref.ns);
    static const json::json_pointer kDeletionTimestamp("/metadata/deletionTimestamp");
    if (ns->contains(kDeletionTimestamp)) {
      return status_error(
          403, "Forbidden",
          fmt::format("{} \"{}\" is forbidden: unable to create new content in namespace {} "
                      "because it is being terminated",
                      type.qualified_resource(), name, ref.ns),
          {{"name", name}, {"kind", type.plural}});
    }
  }
  if (lookup(type.storage_key, key)) return already_exists(type.qualified_resource(), name);
  return std::nullopt;
}

ApiResult ApiStore::Impl::create(const ResourceType& type, const ResourceRef& ref, json body,
                                 const WriteOptions& options, bool from_apply) {
  if (auto problem = check_kind(type.api_version(), type.kind, body)) return *problem;
  json& meta = body["metadata"];
  // Namespace: from the URL; a different one in the body is an error.
  if (type.namespaced) {
    std::string body_ns = meta.value("namespace", "");
    if (ref.ns.empty()) return bad_request("the namespace of the object must be set in the URL");
    if (!body_ns.empty() && body_ns != ref.ns) {
      return bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
    }
    meta["namespace"] = ref.ns;
  } else {
    meta.erase("namespace");
  }
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName") && meta["generateName"].is_string() &&
      !meta["generateName"].get<std::string>().empty()) {
    static const char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
    std::string base = meta["generateName"].get<std::string>().substr(0, 58);
    do {
      name = base;
      for (int i = 0; i < 5; ++i) name.push_back(kChars[random() % (sizeof kChars - 1)]);
    } while (lookup(type.storage_key, object_key(type.namespaced ? ref.ns : "", name)));
    meta["name"] = name;
  }
  if (name.empty()) {
    return invalid(type.qualified_kind(), "", type.kind, type.group,
                   {{"FieldValueRequired", "metadata.name",
                     "Required value: name or generateName is required"}});
  }
  if (!ref.name.empty() && ref.name != name && !from_apply) {
    return bad_request(fmt::format(
        "the name of the object ({}) does not match the name on the URL ({})", name, ref.name));
  }
  const bool rbac = type.group == "rbac.authorization.k8s.io";
  if (auto problem = rbac ? path_segment_problem(name) : name_problem(name);
      problem && type.plural != "events") {
    return invalid(type.qualified_kind(), name, type.kind, type.group,
                   {{"FieldValueInvalid", "metadata.name",
                     fmt::format("Invalid value: \"{}\": {}", name, *problem)}});
  }
  std::string key = object_key(type.namespaced ? ref.ns : "", name);
  if (auto refused = refuse_create(type, ref, name, key)) return std::move(*refused);

  std::vector<std::string> warnings;
  // Mutating admission (the webhook a store plays) comes before the registry's defaults.
  if (this->options.kueue_pod_webhook) apply_kueue_pod_webhook(type, body);
  apply_builtin_defaults(type, body, next_cluster_ip, now_text());
  if (auto problem = admit(type, body, options, warnings)) return *problem;
  // Server-owned metadata.
  json& owned = body["metadata"];
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "selfLink"}) {
    owned.erase(k);
  }
  owned["uid"] = new_uid();
  owned["creationTimestamp"] = now_text();
  owned["generation"] = 1;
  if (!from_apply) {
    track_update(json(), body, default_manager(options), apply_context(type, false), now_text());
  }
  if (type.plural == "customresourcedefinitions" && type.group == "apiextensions.k8s.io") {
    body.erase("status");
  }
  if (options.dry_run) {
    return object_answer(201, type, std::make_shared<const json>(std::move(body)), options,
                         std::move(warnings));
  }
  return object_answer(201, type, store_created(type, ref, name, key, std::move(body), options),
                       options, std::move(warnings));
}

ObjectPtr ApiStore::Impl::store_created(const ResourceType& type, const ResourceRef& ref,
                                        const std::string& name, const std::string& key, json body,
                                        const WriteOptions& options) {
  json stored = to_storage(type, std::move(body));
  set_rv(stored, next_rv());
  auto object = std::make_shared<const json>(std::move(stored));
  put(type.storage_key, key, object, nullptr);
  after_write(type, *object, false);
  ResourceRef written = ref;
  written.name = name;
  record_write("create", type, written, default_manager(options), options.user_agent, 201);
  // The garbage collector also looks at the owners of new dependents: an object created with
  // owner references none of which exists any more (a controller racing its owner's deletion)
  // is deleted right away instead of living forever.
  std::vector<std::string> owner_uids;
  static const json::json_pointer kOwnerReferences("/metadata/ownerReferences");
  if (object->contains(kOwnerReferences)) {
    for (const auto& r : (*object)[kOwnerReferences]) {
      if (r.is_object()) owner_uids.push_back(r.value("uid", ""));
    }
  }
  if (!owner_uids.empty()) collect_garbage(owner_uids, {}, {});
  ObjectPtr latest = lookup(type.storage_key, key);
  return latest ? latest : object;
}

bool ApiStore::Impl::can_prepare_create(const ResourceType& type, const json& body) {
  // Services take their cluster IP from the store, and a generated name is picked under the lock.
  // A client's managedFields entries may own fields the store sets under the lock (uid,
  // creationTimestamp), which must be there when the entries are tracked. A body create() answers
  // with an error right away gains nothing either.
  if (type.group.empty() && type.plural == "services") return false;
  if (!body.is_object()) return false;
  const auto meta = body.find("metadata");
  if (meta == body.end() || !meta->is_object() || meta->contains("managedFields")) return false;
  const auto name = meta->find("name");
  return name != meta->end() && name->is_string() && !name->get_ref<const std::string&>().empty();
}

PreparedCreate ApiStore::Impl::prepare_create(const ResourceType& type, const ResourceRef& ref,
                                              json body, const WriteOptions& options,
                                              const std::string& now) const {
  // create() step by step, leaving out what needs the store's state.
  PreparedCreate out;
  if (auto problem = check_kind(type.api_version(), type.kind, body)) {
    out.answer = std::move(*problem);
    return out;
  }
  json& meta = body["metadata"];
  if (type.namespaced) {
    std::string body_ns = meta.value("namespace", "");
    if (ref.ns.empty()) {
      out.answer = bad_request("the namespace of the object must be set in the URL");
      return out;
    }
    if (!body_ns.empty() && body_ns != ref.ns) {
      out.answer = bad_request(
          "the namespace of the provided object does not match the namespace sent on the request");
      return out;
    }
    meta["namespace"] = ref.ns;
  } else {
    meta.erase("namespace");
  }
  out.name = meta.value("name", "");  // not empty: can_prepare_create
  const std::string& name = out.name;
  if (!ref.name.empty() && ref.name != name) {
    out.answer = bad_request(fmt::format(
        "the name of the object ({}) does not match the name on the URL ({})", name, ref.name));
    return out;
  }
  const bool rbac = type.group == "rbac.authorization.k8s.io";
  if (auto problem = rbac ? path_segment_problem(name) : name_problem(name);
      problem && type.plural != "events") {
    out.answer = invalid(type.qualified_kind(), name, type.kind, type.group,
                         {{"FieldValueInvalid", "metadata.name",
                           fmt::format("Invalid value: \"{}\": {}", name, *problem)}});
    return out;
  }
  // Here create() looks at the namespace and whether the name is taken (commit_create).
  std::uint32_t no_cluster_ip = 0;  // not a Service (can_prepare_create)
  if (this->options.kueue_pod_webhook) apply_kueue_pod_webhook(type, body);
  apply_builtin_defaults(type, body, no_cluster_ip, now);
  if (auto problem = admit(type, body, options, out.warnings)) {
    out.refusal = std::move(*problem);
    return out;
  }
  json& owned = body["metadata"];
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "selfLink"}) {
    owned.erase(k);
  }
  // uid and creationTimestamp come under the lock; the fields they are are no manager's.
  owned["generation"] = 1;
  track_update(json(), body, default_manager(options), apply_context(type, false), now);
  if (type.plural == "customresourcedefinitions" && type.group == "apiextensions.k8s.io") {
    body.erase("status");
  }
  out.object = std::move(body);
  return out;
}

ApiResult ApiStore::Impl::commit_create(const ResourceType& type, const ResourceRef& ref,
                                        PreparedCreate prepared, const WriteOptions& options,
                                        const std::string& now, ObjectPtr& created) {
  if (prepared.answer) return std::move(*prepared.answer);
  const std::string& name = prepared.name;
  std::string key = object_key(type.namespaced ? ref.ns : "", name);
  if (auto refused = refuse_create(type, ref, name, key)) return std::move(*refused);
  if (prepared.refusal) return std::move(*prepared.refusal);
  json& owned = prepared.object["metadata"];
  owned["uid"] = new_uid();
  owned["creationTimestamp"] = now;
  if (options.dry_run) {
    created = std::make_shared<const json>(std::move(prepared.object));
    return ApiResult{201, nullptr, std::move(prepared.warnings)};
  }
  created = store_created(type, ref, name, key, std::move(prepared.object), options);
  return ApiResult{201, nullptr, std::move(prepared.warnings)};
}

namespace {

PreparedWrite answer(ApiResult result) {
  PreparedWrite out;
  out.answer = std::move(result);
  return out;
}

}  // namespace

PreparedWrite ApiStore::Impl::prepare_update(const ResourceType& type, const ResourceRef& ref,
                                             const ObjectPtr& current, json body,
                                             const WriteOptions& options,
                                             const std::string& now) const {
  bool status_endpoint = ref.subresource == "status";
  if (!ref.subresource.empty() && !(status_endpoint && type.has_status_subresource)) {
    return answer(unknown_resource());
  }
  if (auto problem = check_kind(type.api_version(), type.kind, body)) return answer(*problem);
  std::string body_name = body["metadata"].value("name", "");
  if (body_name != ref.name) {
    return answer(bad_request(
        fmt::format("the name of the object ({}) does not match the name on the URL ({})",
                    body_name, ref.name)));
  }
  if (type.namespaced) {
    std::string body_ns = body["metadata"].value("namespace", "");
    if (!body_ns.empty() && body_ns != ref.ns) {
      return answer(bad_request(
          "the namespace of the provided object does not match the namespace sent on the request"));
    }
  }
  if (!current) {
    if (type.allow_create_on_update && !status_endpoint) {
      body["metadata"].erase("resourceVersion");
      PreparedWrite out;
      out.kind = PreparedWrite::Kind::Create;
      out.object = std::move(body);
      return out;
    }
    return answer(not_found(type.qualified_resource(), ref.name));
  }
  if (!body["metadata"].contains("resourceVersion") && !type.allow_unconditional_update) {
    return answer(invalid(type.qualified_kind(), ref.name, type.kind, type.group,
                          {{"FieldValueInvalid", "metadata.resourceVersion",
                            "Invalid value: 0x0: must be specified for an update"}}));
  }
  return prepare_replace(type, ref, current, std::move(body), options, true, false, now);
}

PreparedWrite ApiStore::Impl::prepare_replace(const ResourceType& type, const ResourceRef& ref,
                                              const ObjectPtr& current, json next,
                                              const WriteOptions& options, bool check_rv,
                                              bool managed_fields_done,
                                              const std::string& now) const {
  bool status_endpoint = ref.subresource == "status";
  // Read only: often the stored object itself.
  const ObjectPtr shown = present(type, current);
  const json& before = *shown;
  static const json::json_pointer kResourceVersion("/metadata/resourceVersion");
  if (check_rv && next.contains(kResourceVersion)) {
    const json& wanted = next[kResourceVersion];
    if (!wanted.is_string() || wanted != before["metadata"]["resourceVersion"]) {
      return answer(conflict(type.qualified_resource(), ref.name,
                             "the object has been modified; please apply your changes to the "
                             "latest version and try again"));
    }
  }
  // What each endpoint may change.
  if (type.has_status_subresource) {
    if (status_endpoint) {
      // /status keeps everything but the status, except what apply/patch tracked in
      // managedFields.
      std::optional<json> tracked;
      if (managed_fields_done && next["metadata"].contains("managedFields")) {
        tracked = std::move(next["metadata"]["managedFields"]);
      }
      for (auto it = next.begin(); it != next.end();) {
        if (it.key() != "status" && !before.contains(it.key())) {
          it = next.erase(it);
        } else {
          ++it;
        }
      }
      for (const auto& [key, value] : before.items()) {
        if (key != "status") assign_member(next, key, value);
      }
      if (next.contains("status") && next["status"].is_null()) next.erase("status");
      if (tracked) next["metadata"]["managedFields"] = std::move(*tracked);
    } else if (before.contains("status")) {
      assign_member(next, "status", before["status"]);
    } else {
      next.erase("status");
    }
  }
  json& meta = next["metadata"];
  const json& old_meta = before["metadata"];
  for (const char* k : {"uid", "creationTimestamp", "deletionTimestamp",
                        "deletionGracePeriodSeconds", "generation", "namespace", "name"}) {
    if (old_meta.contains(k)) {
      meta[k] = old_meta[k];
    } else {
      meta.erase(k);
    }
  }
  meta.erase("selfLink");
  if (!meta.contains("managedFields") && old_meta.contains("managedFields")) {
    meta["managedFields"] = old_meta["managedFields"];
  }
  // Finalizers can only be removed once deletion started.
  if (old_meta.contains("deletionTimestamp")) {
    std::set<std::string> old_f = finalizers_of(before), new_f = finalizers_of(next);
    std::vector<std::string> added;
    for (const auto& f : new_f) {
      if (!old_f.count(f)) added.push_back(f);
    }
    if (!added.empty()) {
      std::string list;
      for (const auto& f : added) {
        if (!list.empty()) list.append(", ");
        list.append(fmt::format("\"{}\"", f));
      }
      return answer(invalid(type.qualified_kind(), ref.name, type.kind, type.group,
                            {{"FieldValueForbidden", "metadata.finalizers",
                              fmt::format("Forbidden: no new finalizers can be added if the "
                                          "object is being deleted, found new finalizers "
                                          "[]string{{{}}}",
                                          list)}}));
    }
  }
  PreparedWrite out;
  // A built-in type's checks (validate_builtin_object) look only at what /status keeps from the
  // stored object, which passed them: kube-apiserver's status strategies (a pod's
  // ValidatePodStatusUpdate) do not check the spec again either. Custom resources are checked
  // against their schema whole, as kube-apiserver does.
  const bool checked_already =
      status_endpoint && type.has_status_subresource && !type.custom && type.group.empty();
  if (!checked_already) {
    // An update's object gets the defaults a create's does: a PUT that leaves a defaulted field
    // out changes nothing there.
    if (!type.custom && type.group.empty() && type.plural == "pods") apply_pod_spec_defaults(next);
    if (auto problem =
            admit(type, next, options, out.warnings, status_endpoint ? nullptr : &before)) {
      return answer(*problem);
    }
  }
  if (!same_spec(next, before, type.has_status_subresource)) {
    next["metadata"]["generation"] = before["metadata"].value("generation", 1) + 1;
  }
  if (!managed_fields_done) {
    track_update(before, next, default_manager(options), apply_context(type, status_endpoint), now);
  }
  // The update that removes the last finalizer of an object being deleted is its deletion. A pod
  // in its grace period has a deletionTimestamp and no finalizers: updating it (the kubelet's
  // status, a label) keeps it until the kubelet deletes it with grace period 0.
  out.finalized = old_meta.contains("deletionTimestamp") && !finalizers_of(before).empty() &&
                  finalizers_of(next).empty();
  if (same_apart_from_bookkeeping(next, before) && !out.finalized) {
    // No-op: no new resourceVersion, no event.
    out.answer = ApiResult{200, before, std::move(out.warnings)};
    return out;
  }
  if (options.dry_run) {
    out.answer = ApiResult{200, std::move(next), std::move(out.warnings)};
    return out;
  }
  out.kind = PreparedWrite::Kind::Replace;
  out.object = std::move(next);
  return out;
}

ObjectPtr ApiStore::Impl::commit_replace(const ResourceType& type, const ResourceRef& ref,
                                         const ObjectPtr& current, PreparedWrite& prepared,
                                         const WriteOptions& options) {
  json stored = to_storage(type, std::move(prepared.object));
  set_rv(stored, next_rv());
  auto object = std::make_shared<const json>(std::move(stored));
  std::string key = object_key(type.namespaced ? ref.ns : "", ref.name);
  static const json::json_pointer kDeletionTimestamp("/metadata/deletionTimestamp");
  if (prepared.finalized) {
    // The last finalizer went: the update is the deletion (one DELETED event).
    remove_with(type.storage_key, key, object);
  } else {
    put(type.storage_key, key, object, current);
    after_write(type, *object, false);
    if (current->contains(kDeletionTimestamp)) {
      static const json::json_pointer kUid("/metadata/uid");
      collect_garbage({}, {object->value(kUid, std::string())}, {});
    }
  }
  record_write(ref.subresource == "status" ? "update-status" : "update", type, ref,
               default_manager(options), options.user_agent, 200);
  return object;
}

ApiResult ApiStore::Impl::finish_locked(const ResourceType& type, const ResourceRef& ref,
                                        const ObjectPtr& current, PreparedWrite prepared,
                                        const WriteOptions& options) {
  switch (prepared.kind) {
    case PreparedWrite::Kind::Answer:
      break;
    case PreparedWrite::Kind::Create:
      return create(type, ref, std::move(prepared.object), options, prepared.from_apply);
    case PreparedWrite::Kind::Replace: {
      ObjectPtr stored = commit_replace(type, ref, current, prepared, options);
      return object_answer(200, type, stored, options, std::move(prepared.warnings));
    }
  }
  return std::move(prepared.answer);
}

PreparedWrite ApiStore::Impl::prepare_patch(const ResourceType& type, const ResourceRef& ref,
                                            const ObjectPtr& current, PatchType patch_type,
                                            const Expected<json, ApiResult>& patch,
                                            const WriteOptions& options,
                                            const std::string& now) const {
  bool status_endpoint = ref.subresource == "status";
  if (!ref.subresource.empty() && !(status_endpoint && type.has_status_subresource)) {
    return answer(unknown_resource());
  }
  if (!patch) return answer(patch.error());
  if (patch_type == PatchType::Apply) {
    std::string manager = options.field_manager;
    if (manager.empty()) {
      return answer(invalid(
          "PatchOptions.meta.k8s.io", "", "PatchOptions", "meta.k8s.io",
          {{"FieldValueRequired", "fieldManager", "Required value: is required for apply patch"}}));
    }
    json config = *patch;
    if (auto problem = check_kind(type.api_version(), type.kind, config)) return answer(*problem);
    if (config["metadata"].value("name", "") != ref.name) {
      return answer(
          bad_request(fmt::format("the name of the object ({}) does not match the name on the URL "
                                  "({})",
                                  config["metadata"].value("name", ""), ref.name)));
    }
    ApplyContext context = apply_context(type, status_endpoint);
    const ObjectPtr live = current ? present(type, current) : nullptr;
    auto outcome =
        server_side_apply(live ? *live : json(), config, manager, options.force, context, now);
    if (!outcome) return answer(outcome.error());
    if (!current) {
      if (status_endpoint) return answer(not_found(type.qualified_resource(), ref.name));
      PreparedWrite out;
      out.kind = PreparedWrite::Kind::Create;
      out.object = std::move(outcome->object);
      out.from_apply = true;
      return out;
    }
    return prepare_replace(type, ref, current, std::move(outcome->object), options, true, true,
                           now);
  }
  if (!current) return answer(not_found(type.qualified_resource(), ref.name));
  const ObjectPtr shown = present(type, current);
  const json& live = *shown;
  json next;
  switch (patch_type) {
    case PatchType::Merge:
      if (!patch->is_object()) return answer(bad_request("merge patch must be a JSON object"));
      next = apply_merge_patch(live, *patch);
      break;
    case PatchType::Json: {
      auto patched = apply_json_patch(live, *patch);
      if (!patched) return answer(status_error(422, "Invalid", patched.error().message));
      next = std::move(*patched);
      break;
    }
    case PatchType::Strategic: {
      if (type.custom) {
        return answer(status_error(415, "UnsupportedMediaType",
                                   "the body of the request was in an unknown format - accepted "
                                   "media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml"));
      }
      auto patched = apply_strategic_merge_patch(live, *patch);
      if (!patched) return answer(bad_request(patched.error().message));
      next = std::move(*patched);
      break;
    }
    case PatchType::Apply:
      break;
  }
  if (!next.is_object()) return answer(bad_request("the patched object is not a JSON object"));
  if (auto problem = check_kind(type.api_version(), type.kind, next)) return answer(*problem);
  if (next["metadata"].value("name", "") != ref.name) {
    return answer(bad_request("the name of the patched object does not match the name on the URL"));
  }
  return prepare_replace(type, ref, current, std::move(next), options, true, false, now);
}

namespace {

json crd_condition(const std::string& type, bool status, const std::string& time,
                   const std::string& reason, const std::string& message) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"lastTransitionTime", time},
          {"reason", reason},
          {"message", message}};
}

// The status the establishing controller gives `crd`, whose versions are `established`:
// NamesAccepted and Established (transition times kept where the status did not change),
// acceptedNames, storedVersions. `conflict`: another resource serves its plural or kind.
json crd_status(const json& crd, const std::vector<ResourceType>& established, bool conflict,
                const std::string& time) {
  json names = crd["spec"]["names"];
  if (!names.contains("listKind")) names["listKind"] = names["kind"].get<std::string>() + "List";
  if (!names.contains("singular")) names["singular"] = established.front().singular;
  json conditions = json::array();
  if (conflict) {
    conditions.push_back(crd_condition("NamesAccepted", false, time, "NameConflict",
                                       "the names conflict with another resource"));
    conditions.push_back(
        crd_condition("Established", false, time, "NotAccepted", "not all names are accepted"));
  } else {
    conditions.push_back(
        crd_condition("NamesAccepted", true, time, "NoConflicts", "no conflicts found"));
    conditions.push_back(crd_condition("Established", true, time, "InitialNamesAccepted",
                                       "the initial names have been accepted"));
  }
  const json old_conditions =
      crd.value("status", json::object()).value("conditions", json::array());
  for (auto& c : conditions) {
    for (const auto& old_c : old_conditions) {
      if (old_c.value("type", "") == c["type"] && old_c.value("status", "") == c["status"] &&
          old_c.contains("lastTransitionTime")) {
        c["lastTransitionTime"] = old_c["lastTransitionTime"];
      }
    }
  }
  json stored_versions = json::array();
  for (const auto& v : crd["spec"]["versions"]) {
    if (v.value("storage", false)) stored_versions.push_back(v["name"]);
  }
  return {{"conditions", conditions},
          {"acceptedNames", conflict ? json::object() : names},
          {"storedVersions", stored_versions}};
}

}  // namespace

void ApiStore::Impl::after_write(const ResourceType& type, const json& object, bool deleted) {
  const bool going = deleted || object.contains("/metadata/deletionTimestamp"_json_pointer);
  if (type.group == "apiextensions.k8s.io" && type.plural == "customresourcedefinitions") {
    crd_written(type, object, going);
  } else if (type.group.empty() && type.plural == "namespaces" && !going) {
    add_default_service_account(object.value("/metadata/name"_json_pointer, std::string()));
  }
}

void ApiStore::Impl::crd_written(const ResourceType& type, const json& crd, bool going) {
  std::string name = crd.value("/metadata/name"_json_pointer, std::string());
  std::vector<ResourceType> old = unregister_crd_types(name);
  if (going) {
    if (!old.empty()) stop_serving(old.front().storage_key);
    return;
  }
  auto established = resource_types_from_crd(crd);
  if (!established) return;
  // NamesAccepted: the plural and kind must not be served by another CRD or a built-in.
  bool conflict = false;
  for (const auto& t : *established) {
    for (const auto& other : types) {
      if (other->group == t.group && (other->plural == t.plural || other->kind == t.kind)) {
        conflict = true;
      }
    }
  }
  if (!conflict) {
    for (const auto& t : *established) types.push_back(std::make_shared<const ResourceType>(t));
    crd_types[name] = *established;
  }
  json status = crd_status(crd, *established, conflict, now_text());
  if (crd.value("status", json()) != status) {
    // The establishing controller's write: its own resourceVersion, as in a real cluster.
    json updated = crd;
    updated["status"] = std::move(status);
    set_rv(updated, next_rv());
    std::string key = object_key("", name);
    put(type.storage_key, key, std::make_shared<const json>(std::move(updated)),
        lookup(type.storage_key, key));
  }
}

std::vector<ResourceType> ApiStore::Impl::unregister_crd_types(const std::string& crd_name) {
  std::vector<ResourceType> old = crd_types[crd_name];
  std::erase_if(types, [&](const std::shared_ptr<const ResourceType>& t) {
    return std::any_of(old.begin(), old.end(), [&](const ResourceType& o) {
      return o.group == t->group && o.version == t->version && o.plural == t->plural;
    });
  });
  crd_types.erase(crd_name);
  ++registry_generation;
  return old;
}

void ApiStore::Impl::stop_serving(const std::string& storage_key) {
  auto s = storage.find(storage_key);
  if (s != storage.end()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : s->second) keys.push_back(k);
    for (const auto& k : keys) remove_now(storage_key, k);
  }
  // The resource is no longer served: its watches end after the DELETED events.
  for (auto& w : watchers) {
    if (w.type.storage_key == storage_key) {
      w.subscription->close_after_delivery();
      pending.notify.push_back(w.subscription);
    }
  }
}

void ApiStore::Impl::add_default_service_account(const std::string& namespace_name) {
  std::string sa_key = object_key(namespace_name, "default");
  if (lookup("/serviceaccounts", sa_key)) return;
  json sa = {{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata",
              {{"name", "default"},
               {"namespace", namespace_name},
               {"uid", new_uid()},
               {"creationTimestamp", now_text()},
               {"generation", 1}}}};
  set_rv(sa, next_rv());
  put("/serviceaccounts", sa_key, std::make_shared<const json>(std::move(sa)), nullptr);
}

}  // namespace depl::devcluster
