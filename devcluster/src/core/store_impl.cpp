// Shared machinery of the store: registry lookups, presentation/storage forms, the write
// primitives that keep indexes, history and watches consistent.
#include "store_impl.hpp"

#include <fmt/format.h>

#include "builtin_types.hpp"
#include "depl/common/time.hpp"
#include "depl/devcluster/structural_schema.hpp"

namespace depl::devcluster {

using nlohmann::json;

ApiResult unknown_resource() {
  return status_error(404, "NotFound", "the server could not find the requested resource",
                      json::object());
}

ApiResult method_not_supported(const ResourceType& type, const std::string& verb) {
  return status_error(405, "MethodNotAllowed",
                      fmt::format("{} is not supported on resources of kind \"{}\"", verb,
                                  type.qualified_resource()));
}

std::optional<ApiResult> check_preconditions(const ResourceType& type, const ResourceRef& ref,
                                             const json& current,
                                             const std::optional<std::string>& uid,
                                             const std::optional<std::string>& resource_version) {
  // json_pointer literals parse their text on every use: the write path keeps its pointers.
  static const json::json_pointer kUid("/metadata/uid");
  static const json::json_pointer kResourceVersion("/metadata/resourceVersion");
  const std::string current_uid = current.value(kUid, std::string());
  if (uid && *uid != current_uid) {
    return conflict(
        type.qualified_resource(), ref.name,
        fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}", *uid,
                    current_uid));
  }
  const std::string current_rv = current.value(kResourceVersion, std::string());
  if (resource_version && *resource_version != current_rv) {
    return conflict(type.qualified_resource(), ref.name,
                    fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                                "ResourceVersion in object meta: {}",
                                *resource_version, current_rv));
  }
  return std::nullopt;
}

std::string default_manager(const WriteOptions& options) {
  if (!options.field_manager.empty()) return options.field_manager;
  if (!options.user_agent.empty()) {
    return options.user_agent.substr(0, options.user_agent.find('/'));
  }
  return "unknown";
}

ApiStore::Impl::Impl(StoreOptions opts) : options(std::move(opts)), random(options.seed) {
  for (auto& t : builtin_resource_types(options.workload_scheduling)) {
    types.push_back(std::make_shared<const ResourceType>(std::move(t)));
  }
}

const ResourceType* ApiStore::Impl::find_type(const std::string& group, const std::string& version,
                                              const std::string& plural) const {
  return shared_type(group, version, plural).get();
}

std::shared_ptr<const ResourceType> ApiStore::Impl::shared_type(const std::string& group,
                                                                const std::string& version,
                                                                const std::string& plural) const {
  for (const auto& t : types) {
    if (t->group == group && t->version == version && t->plural == plural) return t;
  }
  return nullptr;
}

const ResourceType* ApiStore::Impl::storage_type(const std::string& storage_key) const {
  for (const auto& t : types) {
    if (t->storage_key == storage_key) return t.get();
  }
  return nullptr;
}

std::string ApiStore::Impl::now_text() const {
  return format_rfc3339(options.now());
}

std::string ApiStore::Impl::new_uid() {
  std::uint64_t a = random(), b = random();
  // RFC 4122 version 4 layout.
  a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF,
                     b >> 48, b & 0xFFFFFFFFFFFFULL);
}

ObjectPtr ApiStore::Impl::lookup(const std::string& storage_key, const std::string& key) const {
  auto s = storage.find(storage_key);
  if (s == storage.end()) return nullptr;
  auto it = s->second.find(key);
  return it == s->second.end() ? nullptr : it->second;
}

ObjectPtr ApiStore::Impl::present(const ResourceType& type, const ObjectPtr& stored) {
  if (!stored) return stored;
  if (type.group == "events.k8s.io")
    return std::make_shared<const json>(event_to_events_v1(*stored));
  if (type.custom) {
    bool same_version = stored->value("apiVersion", "") == type.api_version();
    if (same_version && (!type.schema || !lacks_schema_defaults(*stored, *type.schema))) {
      return stored;
    }
    json copy = *stored;
    copy["apiVersion"] = type.api_version();
    if (type.schema) apply_schema_defaults(copy, *type.schema);
    if (same_version && copy == *stored) return stored;
    return std::make_shared<const json>(std::move(copy));
  }
  return stored;
}

ApiResult ApiStore::Impl::object_answer(int code, const ResourceType& type, const ObjectPtr& stored,
                                        const WriteOptions& options,
                                        std::vector<std::string> warnings) {
  ApiResult result{code, nullptr, std::move(warnings)};
  ObjectPtr shown = present(type, stored);
  if (options.shared_answer) {
    result.object = std::move(shown);
  } else if (shown) {
    result.body = *shown;
  }
  return result;
}

json ApiStore::Impl::to_storage(const ResourceType& type, json object) {
  if (type.group == "events.k8s.io") return events_v1_to_event(object);
  return object;
}

void ApiStore::Impl::set_rv(json& object, std::uint64_t version) const {
  object["metadata"]["resourceVersion"] = std::to_string(version);
}

std::string uid_of(const json& object) {
  static const json::json_pointer kUid("/metadata/uid");
  return object.value(kUid, std::string());
}

namespace {

std::vector<std::string> owner_uids(const json& object) {
  static const json::json_pointer kOwnerReferences("/metadata/ownerReferences");
  std::vector<std::string> uids;
  if (!object.contains(kOwnerReferences)) return uids;
  for (const auto& r : object[kOwnerReferences]) {
    if (r.is_object() && r.contains("uid") && r["uid"].is_string()) uids.push_back(r["uid"]);
  }
  return uids;
}

// The labels of an object, read in place (null when it has none).
const json& labels_of(const json& object) {
  static const json::json_pointer kLabels("/metadata/labels");
  static const json none;
  return object.contains(kLabels) ? object[kLabels] : none;
}

}  // namespace

void ApiStore::Impl::put(const std::string& storage_key, const std::string& key, ObjectPtr object,
                         const ObjectPtr& previous) {
  static const json::json_pointer kResourceVersion("/metadata/resourceVersion");
  if (previous) {
    for (const auto& owner : owner_uids(*previous)) {
      auto it = dependents.find(owner);
      if (it != dependents.end()) {
        it->second.erase(uid_of(*previous));
        if (it->second.empty()) dependents.erase(it);
      }
    }
  }
  std::string uid = uid_of(*object);
  for (const auto& owner : owner_uids(*object)) dependents[owner].insert(uid);
  by_uid[uid] = {storage_key, key};
  storage[storage_key][key] = object;
  std::uint64_t version = std::stoull(object->value(kResourceVersion, std::string("0")));
  record_event({version, storage_key, previous ? "MODIFIED" : "ADDED", object, previous});
}

void ApiStore::Impl::erase(const std::string& storage_key, const std::string& key,
                           const ObjectPtr& last) {
  static const json::json_pointer kResourceVersion("/metadata/resourceVersion");
  storage[storage_key].erase(key);
  std::string uid = uid_of(*last);
  by_uid.erase(uid);
  for (const auto& owner : owner_uids(*last)) {
    auto it = dependents.find(owner);
    if (it != dependents.end()) {
      it->second.erase(uid);
      if (it->second.empty()) dependents.erase(it);
    }
  }
  std::uint64_t version = std::stoull(last->value(kResourceVersion, std::string("0")));
  record_event({version, storage_key, "DELETED", last, nullptr});
}

void ApiStore::Impl::record_event(HistoryEvent event) {
  static const json::json_pointer kNamespace("/metadata/namespace");
  // Fan out to watchers, converting once per distinct served type.
  std::map<const ResourceType*, std::pair<ObjectPtr, ObjectPtr>> presented;
  for (auto it = watchers.begin(); it != watchers.end();) {
    Watcher& w = *it;
    if (w.subscription->closed()) {
      it = watchers.erase(it);
      continue;
    }
    if (w.type.storage_key != event.storage_key) {
      ++it;
      continue;
    }
    const ResourceType* key = find_type(w.type.group, w.type.version, w.type.plural);
    auto [cached, inserted] = presented.try_emplace(key);
    if (inserted) {
      cached->second.first = present(w.type, event.object);
      cached->second.second = event.previous ? present(w.type, event.previous) : nullptr;
    }
    const ObjectPtr& now = cached->second.first;
    const ObjectPtr& before = cached->second.second;
    // Field selectors are evaluated on the storage (core) form; see watch().
    auto matches_stored = [&](const ObjectPtr& stored, const ObjectPtr& shown) {
      if (!w.ns.empty() && shown->value(kNamespace, std::string()) != w.ns) return false;
      return w.labels.matches(labels_of(*shown)) && w.fields.matches(*stored);
    };
    bool now_matches = matches_stored(event.object, now);
    if (event.type == "MODIFIED" && event.previous) {
      bool before_matches = matches_stored(event.previous, before);
      if (now_matches && before_matches) {
        w.subscription->push({"MODIFIED", now});
      } else if (now_matches) {
        w.subscription->push({"ADDED", now});
      } else if (before_matches) {
        // Left the selection: DELETED with the last matching state at the new version.
        json gone = *before;
        gone["metadata"]["resourceVersion"] = std::to_string(event.rv);
        w.subscription->push({"DELETED", std::make_shared<const json>(std::move(gone))});
      } else {
        ++it;
        continue;
      }
    } else if (now_matches) {
      w.subscription->push({event.type, now});
    } else {
      ++it;
      continue;
    }
    pending.notify.push_back(w.subscription);
    ++it;
  }
  history.push_back(std::move(event));
  while (history.size() > options.history_window && !history.empty()) {
    compacted_rv = history.front().rv;
    pending.retired.push_back(std::move(history.front()));
    history.pop_front();
  }
}

void ApiStore::Impl::record_write(const std::string& verb, const ResourceType& type,
                                  const ResourceRef& ref, const std::string& manager,
                                  const std::string& user_agent, int code) {
  pending.records.push_back({verb, type.api_version(), type.plural, ref.subresource, ref.ns,
                             ref.name, manager, user_agent, std::to_string(rv), code,
                             std::chrono::steady_clock::now()});
}

}  // namespace depl::devcluster
