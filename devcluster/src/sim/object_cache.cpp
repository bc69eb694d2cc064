#include "sim/object_cache.hpp"

#include <set>
#include <string_view>

namespace depl::devcluster {

ObjectCache::ObjectCache(ApiStore& store, ResourceRef collection, LoopSignal& signal)
    : store_(store), collection_(std::move(collection)), signal_(signal) {}

ObjectCache::~ObjectCache() {
  if (subscription_) subscription_->close();
}

ObjectCache::Key ObjectCache::key_of(const nlohmann::json& object) {
  // Read in place: this runs for every event, and a copy of metadata (managedFields and all)
  // cost more than the rest of the cache's work.
  auto string_at = [](const nlohmann::json& meta, const char* key) -> std::string_view {
    auto it = meta.find(key);
    return it != meta.end() && it->is_string()
               ? std::string_view(it->get_ref<const std::string&>())
               : std::string_view();
  };
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return {};
  const std::string_view ns = string_at(*meta, "namespace");
  const std::string_view name = string_at(*meta, "name");
  Key key;
  key.reserve(ns.size() + 1 + name.size());
  if (!ns.empty()) key.append(ns).append("/");
  key.append(name);
  return key;
}

void ObjectCache::put(nlohmann::json object) {
  Key key = key_of(object);
  objects_[std::move(key)] = std::make_shared<const nlohmann::json>(std::move(object));
}

bool ObjectCache::sync(const Handler& on_event) {
  bool changed = false;
  std::set<Key> seen_since_relist;
  bool relisting = false;
  if (!subscription_ || (subscription_->closed())) {
    // Drain what the closed watch still holds, then watch again from the current state.
    if (subscription_) {
      for (auto& e : subscription_->drain()) {
        (void)e;  // superseded by the relist below
      }
    }
    auto sub = store_.watch(collection_, WatchOptions{});
    if (!sub) return false;
    subscription_ = std::move(*sub);
    subscription_->set_notifier([s = &signal_] { s->notify(); });
    relisting = true;
  }
  auto events = subscription_->drain();
  for (const auto& e : events) {
    if (!e.object || (e.type != "ADDED" && e.type != "MODIFIED" && e.type != "DELETED")) continue;
    const Key key = key_of(*e.object);
    if (e.type == "DELETED") {
      objects_.erase(key);
    } else {
      objects_[key] = e.object;
      if (relisting) seen_since_relist.insert(key);
    }
    changed = true;
    if (on_event) on_event(e.type, e.object);
  }
  if (relisting) {
    // Objects deleted while no watch was open: the relist did not mention them.
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (!seen_since_relist.count(it->first)) {
        const ObjectPtr gone = it->second;
        it = objects_.erase(it);
        changed = true;
        if (on_event) on_event("DELETED", gone);
      } else {
        ++it;
      }
    }
  }
  return changed;
}

}  // namespace depl::devcluster
