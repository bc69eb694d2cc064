#include "sim/object_cache.hpp"

#include <set>

namespace depl::devcluster {

ObjectCache::ObjectCache(ApiStore& store, ResourceRef collection, LoopSignal& signal)
    : store_(store), collection_(std::move(collection)), signal_(signal) {}

ObjectCache::~ObjectCache() {
  if (subscription_) subscription_->close();
}

ObjectCache::Key ObjectCache::key_of(const nlohmann::json& object) {
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json();
  const std::string ns = meta.is_object() ? meta.value("namespace", "") : "";
  const std::string name = meta.is_object() ? meta.value("name", "") : "";
  return ns.empty() ? name : ns + "/" + name;
}

void ObjectCache::put(const nlohmann::json& object) {
  objects_[key_of(object)] = object;
}

bool ObjectCache::sync(
    const std::function<void(const std::string&, const nlohmann::json&)>& on_event) {
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
      objects_[key] = *e.object;
      if (relisting) seen_since_relist.insert(key);
    }
    changed = true;
    if (on_event) on_event(e.type, *e.object);
  }
  if (relisting) {
    // Objects deleted while no watch was open: the relist did not mention them.
    for (auto it = objects_.begin(); it != objects_.end();) {
      if (!seen_since_relist.count(it->first)) {
        const nlohmann::json gone = it->second;
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
