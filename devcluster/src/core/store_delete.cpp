// Deletion: preconditions, propagation policies, finalizers and deletionTimestamp, graceful pod
// deletion, namespace termination, and the garbage collector that follows ownerReferences
// (background: dependents of a gone owner are deleted; foreground: the owner waits, through the
// foregroundDeletion finalizer, for its blocking dependents; orphan: references are removed).
#include <fmt/format.h>

#include "depl/common/time.hpp"
#include "store_impl.hpp"

namespace depl::devcluster {

using nlohmann::json;

namespace {

// The value at `pointer` in `object`, read in place (an empty array when there is none): the
// garbage collector looks at every dependent of an owner on each create.
const json& array_at(const json& object, const json::json_pointer& pointer) {
  static const json none = json::array();
  return object.contains(pointer) ? object[pointer] : none;
}

bool has_finalizer(const json& object, const std::string& finalizer) {
  static const json::json_pointer kFinalizers("/metadata/finalizers");
  for (const auto& f : array_at(object, kFinalizers)) {
    if (f == finalizer) return true;
  }
  return false;
}

bool is_deleting(const json& object) {
  static const json::json_pointer kDeletionTimestamp("/metadata/deletionTimestamp");
  return object.contains(kDeletionTimestamp);
}

const json& owner_references(const json& object) {
  static const json::json_pointer kOwnerReferences("/metadata/ownerReferences");
  return array_at(object, kOwnerReferences);
}

constexpr const char* kForeground = "foregroundDeletion";

}  // namespace

ApiResult ApiStore::Impl::remove(const ResourceType& type, const ResourceRef& ref,
                                 const DeleteOptions& options) {
  if (!ref.subresource.empty()) return method_not_supported(type, "delete");
  std::string key = object_key(type.namespaced ? ref.ns : "", ref.name);
  ObjectPtr current = lookup(type.storage_key, key);
  if (!current) return not_found(type.qualified_resource(), ref.name);
  if (auto failed = check_preconditions(type, ref, *current, options.precondition_uid,
                                        options.precondition_resource_version)) {
    return *failed;
  }
  if (type.group.empty() && type.plural == "namespaces" &&
      (ref.name == "default" || ref.name == "kube-system" || ref.name == "kube-public")) {
    return status_error(403, "Forbidden",
                        fmt::format("namespaces \"{}\" is forbidden: this namespace may not be "
                                    "deleted",
                                    ref.name),
                        {{"name", ref.name}, {"kind", "namespaces"}});
  }
  std::string policy =
      options.propagation_policy.empty() ? "Background" : options.propagation_policy;
  if (policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return invalid("DeleteOptions.meta.k8s.io", "", "DeleteOptions", "meta.k8s.io",
                   {{"FieldValueNotSupported", "propagationPolicy",
                     fmt::format("Unsupported value: \"{}\": supported values: \"Foreground\", "
                                 "\"Background\", \"Orphan\", \"nil\"",
                                 policy)}});
  }
  if (options.grace_period_seconds && *options.grace_period_seconds < 0) {
    return invalid("DeleteOptions.meta.k8s.io", "", "DeleteOptions", "meta.k8s.io",
                   {{"FieldValueInvalid", "gracePeriodSeconds",
                     "Invalid value: must be greater than or equal to 0"}});
  }
  if (options.dry_run) return ApiResult{200, *present(type, current), {}};
  ObjectPtr last = delete_object(type.storage_key, key, policy, options.grace_period_seconds);
  record_write("delete", type, ref, "", options.user_agent, 200);
  return ApiResult{200, *present(type, last ? last : current), {}};
}

ObjectPtr ApiStore::Impl::delete_object(const std::string& storage_key, const std::string& key,
                                        const std::string& policy,
                                        std::optional<std::int64_t> grace) {
  ObjectPtr current = lookup(storage_key, key);
  if (!current) return nullptr;
  const ResourceType* type_ptr = storage_type(storage_key);
  std::string uid = uid_of(*current);
  if (policy == "Orphan") orphan_dependents(uid);
  current = lookup(storage_key, key);
  json next = *current;
  json& meta = next["metadata"];
  bool already = is_deleting(*current);
  bool changed = false;

  bool is_pod = storage_key == "/pods";
  bool is_namespace = storage_key == "/namespaces";
  if (is_pod && options.graceful_pod_deletion &&
      !current->value("/spec/nodeName"_json_pointer, std::string()).empty()) {
    std::int64_t g = grace ? *grace
                           : current->value("/spec/terminationGracePeriodSeconds"_json_pointer,
                                            std::int64_t{30});
    if (g > 0) {
      std::int64_t existing = meta.value("deletionGracePeriodSeconds", std::int64_t{-1});
      if (!already || g < existing) {
        meta["deletionTimestamp"] = format_rfc3339(options.now() + std::chrono::seconds(g));
        meta["deletionGracePeriodSeconds"] = g;
        changed = true;
      }
      if (policy == "Foreground" && dependents.count(uid) && !has_finalizer(next, kForeground)) {
        meta["finalizers"].push_back(kForeground);
        changed = true;
      }
      if (changed) {
        set_rv(next, next_rv());
        auto object = std::make_shared<const json>(std::move(next));
        put(storage_key, key, object, current);
        return object;
      }
      return current;
    }
  }
  if (policy == "Foreground" && dependents.count(uid) && !has_finalizer(next, kForeground)) {
    meta["finalizers"].push_back(kForeground);
    changed = true;
  }
  bool has_finalizers = !next.value("/metadata/finalizers"_json_pointer, json::array()).empty();
  if (has_finalizers || is_namespace) {
    if (!already) {
      meta["deletionTimestamp"] = format_rfc3339(options.now());
      meta["deletionGracePeriodSeconds"] = 0;
      changed = true;
    }
    if (is_namespace && next.value("/status/phase"_json_pointer, std::string()) != "Terminating") {
      next["status"]["phase"] = "Terminating";
      changed = true;
    }
    if (!changed) return current;
    set_rv(next, next_rv());
    auto object = std::make_shared<const json>(std::move(next));
    put(storage_key, key, object, current);
    if (type_ptr) {
      ResourceType type = *type_ptr;
      after_write(type, *object, false);
    }
    std::set<std::string> namespaces;
    if (is_namespace)
      namespaces.insert(object->value("/metadata/name"_json_pointer, std::string()));
    collect_garbage({uid}, {uid}, namespaces);
    return lookup(storage_key, key) ? lookup(storage_key, key) : object;
  }
  remove_now(storage_key, key);
  return current;
}

void ApiStore::Impl::remove_now(const std::string& storage_key, const std::string& key) {
  ObjectPtr current = lookup(storage_key, key);
  if (!current) return;
  json gone = *current;
  set_rv(gone, next_rv());
  remove_with(storage_key, key, std::make_shared<const json>(std::move(gone)));
}

void ApiStore::Impl::remove_with(const std::string& storage_key, const std::string& key,
                                 const ObjectPtr& last) {
  erase(storage_key, key, last);
  if (const ResourceType* type = storage_type(storage_key);
      type && type->plural == "customresourcedefinitions") {
    ResourceType copy = *type;
    after_write(copy, *last, true);
  }
  std::vector<std::string> owners;
  for (const auto& r : owner_references(*last)) {
    if (r.contains("uid") && r["uid"].is_string()) owners.push_back(r["uid"]);
  }
  std::set<std::string> namespaces;
  std::string ns = last->value("/metadata/namespace"_json_pointer, std::string());
  if (!ns.empty()) namespaces.insert(ns);
  collect_garbage({uid_of(*last)}, owners, namespaces);
}

void ApiStore::Impl::orphan_dependents(const std::string& owner_uid) {
  auto it = dependents.find(owner_uid);
  if (it == dependents.end()) return;
  std::set<std::string> deps = it->second;
  for (const auto& dep : deps) {
    auto loc = by_uid.find(dep);
    if (loc == by_uid.end()) continue;
    auto [storage_key, key] = loc->second;
    ObjectPtr current = lookup(storage_key, key);
    json next = *current;
    json refs = json::array();
    for (const auto& r : next["metadata"]["ownerReferences"]) {
      if (r.value("uid", "") != owner_uid) refs.push_back(r);
    }
    if (refs.empty()) {
      next["metadata"].erase("ownerReferences");
    } else {
      next["metadata"]["ownerReferences"] = refs;
    }
    set_rv(next, next_rv());
    put(storage_key, key, std::make_shared<const json>(std::move(next)), current);
  }
}

void ApiStore::Impl::collect_garbage(std::vector<std::string> dependents_of,
                                     std::vector<std::string> owners,
                                     std::set<std::string> namespaces) {
  // Dependents whose owners are all gone (or being deleted in the foreground) are deleted.
  for (const auto& owner_uid : dependents_of) {
    auto it = dependents.find(owner_uid);
    if (it == dependents.end()) continue;
    std::set<std::string> deps = it->second;
    for (const auto& dep : deps) {
      auto loc = by_uid.find(dep);
      if (loc == by_uid.end()) continue;
      auto [storage_key, key] = loc->second;
      ObjectPtr object = lookup(storage_key, key);
      if (!object || is_deleting(*object)) continue;
      bool solid = false, foreground = false;
      for (const auto& r : owner_references(*object)) {
        auto owner_loc = by_uid.find(r.value("uid", ""));
        if (owner_loc == by_uid.end()) continue;
        ObjectPtr owner = lookup(owner_loc->second.first, owner_loc->second.second);
        if (owner && is_deleting(*owner) && has_finalizer(*owner, kForeground)) {
          foreground = true;
        } else if (owner) {
          solid = true;
        }
      }
      if (solid) continue;
      std::string policy = foreground && dependents.count(dep) ? "Foreground" : "Background";
      delete_object(storage_key, key, policy, std::nullopt);
    }
  }
  // Owners deleted in the foreground finish once no blocking dependent is left.
  for (const auto& owner_uid : owners) {
    auto loc = by_uid.find(owner_uid);
    if (loc == by_uid.end()) continue;
    auto [storage_key, key] = loc->second;
    ObjectPtr owner = lookup(storage_key, key);
    if (!owner || !is_deleting(*owner) || !has_finalizer(*owner, kForeground)) continue;
    bool blocked = false;
    if (auto it = dependents.find(owner_uid); it != dependents.end()) {
      for (const auto& dep : it->second) {
        auto dep_loc = by_uid.find(dep);
        if (dep_loc == by_uid.end()) continue;
        ObjectPtr d = lookup(dep_loc->second.first, dep_loc->second.second);
        if (!d) continue;
        for (const auto& r : owner_references(*d)) {
          if (r.value("uid", "") == owner_uid && r.value("blockOwnerDeletion", false)) {
            blocked = true;
          }
        }
      }
    }
    if (blocked) continue;
    json next = *owner;
    json finalizers = json::array();
    for (const auto& f : next["metadata"]["finalizers"]) {
      if (f != kForeground) finalizers.push_back(f);
    }
    if (finalizers.empty()) {
      remove_now(storage_key, key);
      continue;
    }
    next["metadata"]["finalizers"] = finalizers;
    set_rv(next, next_rv());
    put(storage_key, key, std::make_shared<const json>(std::move(next)), owner);
  }
  for (const auto& ns : namespaces) finalize_namespace(ns);
}

void ApiStore::Impl::finalize_namespace(const std::string& name) {
  ObjectPtr ns = lookup("/namespaces", object_key("", name));
  if (!ns || !is_deleting(*ns)) return;
  // Re-entered from the removals below: the outermost call finishes the job.
  if (finalizing_namespaces.count(name)) return;
  finalizing_namespaces.insert(name);
  std::string prefix = name + "/";
  std::vector<std::pair<std::string, std::string>> contents;
  for (const auto& [storage_key, objects] : storage) {
    for (auto it = objects.lower_bound(prefix);
         it != objects.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      contents.emplace_back(storage_key, it->first);
    }
  }
  for (const auto& [storage_key, key] : contents) {
    ObjectPtr object = lookup(storage_key, key);
    if (object && !is_deleting(*object))
      delete_object(storage_key, key, "Background", std::nullopt);
  }
  finalizing_namespaces.erase(name);
  bool empty = true;
  for (const auto& [storage_key, objects] : storage) {
    auto it = objects.lower_bound(prefix);
    if (it != objects.end() && it->first.compare(0, prefix.size(), prefix) == 0) empty = false;
  }
  ns = lookup("/namespaces", object_key("", name));
  if (empty && ns && ns->value("/metadata/finalizers"_json_pointer, json::array()).empty()) {
    remove_now("/namespaces", object_key("", name));
  }
}

}  // namespace depl::devcluster
