// Store: a hash map of immutable objects plus inverted indexes, behind a shared mutex. The
// writer's cost per event is the index update of one object; snapshots are copied lazily.
#include "depl/kube/runtime/store.hpp"

#include <algorithm>

namespace depl::kube {

namespace {

const nlohmann::json* find_path(const nlohmann::json& object, std::string_view a,
                                std::string_view b) {
  const auto first = object.find(a);
  if (first == object.end() || !first->is_object()) return nullptr;
  const auto second = first->find(b);
  return second == first->end() ? nullptr : &*second;
}

std::string resource_version_of(const nlohmann::json& object) {
  const nlohmann::json* rv = find_path(object, "metadata", "resourceVersion");
  return rv != nullptr && rv->is_string() ? rv->get<std::string>() : std::string();
}

}  // namespace

namespace indexes {

IndexFunction by_label() {
  return [](const nlohmann::json& object) {
    std::vector<std::string> values;
    const nlohmann::json* labels = find_path(object, "metadata", "labels");
    if (labels == nullptr || !labels->is_object()) return values;
    values.reserve(labels->size());
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) values.push_back(key + "=" + value.get_ref<const std::string&>());
    }
    return values;
  };
}

IndexFunction by_owner_uid() {
  return [](const nlohmann::json& object) {
    std::vector<std::string> values;
    const nlohmann::json* owners = find_path(object, "metadata", "ownerReferences");
    if (owners == nullptr || !owners->is_array()) return values;
    for (const auto& owner : *owners) {
      const auto uid = owner.find("uid");
      if (uid != owner.end() && uid->is_string()) values.push_back(uid->get<std::string>());
    }
    return values;
  };
}

IndexFunction by_node_name() {
  return [](const nlohmann::json& object) {
    std::vector<std::string> values;
    const nlohmann::json* node = find_path(object, "spec", "nodeName");
    if (node != nullptr && node->is_string() && !node->get_ref<const std::string&>().empty()) {
      values.push_back(node->get<std::string>());
    }
    return values;
  };
}

}  // namespace indexes

std::map<std::string, IndexFunction, std::less<>> default_indexes() {
  std::map<std::string, IndexFunction, std::less<>> all;
  all.emplace(std::string(indexes::kByLabel), indexes::by_label());
  all.emplace(std::string(indexes::kByOwnerUid), indexes::by_owner_uid());
  all.emplace(std::string(indexes::kByNodeName), indexes::by_node_name());
  return all;
}

ObjectPtr StoreSnapshot::get(const ObjectKey& key) const {
  const auto found = objects_.find(key);
  return found == objects_.end() ? nullptr : found->second.object;
}

std::vector<ObjectPtr> StoreSnapshot::list() const {
  std::vector<ObjectPtr> all;
  all.reserve(objects_.size());
  for (const auto& [key, entry] : objects_) all.push_back(entry.object);
  return all;
}

std::vector<ObjectPtr> StoreSnapshot::by_index(std::string_view index,
                                               std::string_view value) const {
  std::vector<ObjectPtr> matches;
  const auto found_index = indexes_.find(index);
  if (found_index == indexes_.end()) return matches;
  const auto found_value = found_index->second.find(std::string(value));
  if (found_value == found_index->second.end()) return matches;
  std::vector<const ObjectKey*> keys;
  keys.reserve(found_value->second.size());
  for (const KeyRef& key : found_value->second) keys.push_back(key.get());
  std::sort(keys.begin(), keys.end(),
            [](const ObjectKey* a, const ObjectKey* b) { return *a < *b; });
  matches.reserve(keys.size());
  for (const ObjectKey* key : keys) matches.push_back(get(*key));
  return matches;
}

Store::Store(std::map<std::string, IndexFunction, std::less<>> indexes) {
  for (auto& [name, function] : indexes) {
    state_.indexes_[name];  // present even while empty, so by_index knows the name
    index_functions_.emplace_back(name, std::move(function));
  }
}

ObjectPtr Store::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  return state_.get(key);
}

std::vector<ObjectPtr> Store::list() const {
  std::shared_lock lock(mutex_);
  return state_.list();
}

std::vector<ObjectPtr> Store::by_index(std::string_view index, std::string_view value) const {
  std::shared_lock lock(mutex_);
  return state_.by_index(index, value);
}

std::size_t Store::size() const {
  std::shared_lock lock(mutex_);
  return state_.size();
}

std::shared_ptr<const StoreSnapshot> Store::snapshot() const {
  std::lock_guard snapshot_lock(snapshot_mutex_);
  std::shared_lock lock(mutex_);
  if (snapshot_ == nullptr || snapshot_version_ != version_) {
    snapshot_ = std::make_shared<const StoreSnapshot>(state_);
    snapshot_version_ = version_;
  }
  return snapshot_;
}

bool Store::synced() const {
  std::lock_guard lock(synced_mutex_);
  return synced_;
}

bool Store::wait_synced(std::stop_token stop) const {
  std::unique_lock lock(synced_mutex_);
  return synced_changed_.wait(lock, stop, [&] { return synced_; });
}

bool Store::wait_synced_for(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(synced_mutex_);
  return synced_changed_.wait_for(lock, timeout, [&] { return synced_; });
}

void Store::erase_index_locked(const StoreSnapshot::Entry& entry) {
  for (const auto& [name, function] : index_functions_) {
    auto& by_value = state_.indexes_.find(name)->second;
    for (const std::string& value : function(*entry.object)) {
      const auto found = by_value.find(value);
      if (found == by_value.end()) continue;
      found->second.erase(entry.key);
      if (found->second.empty()) by_value.erase(found);
    }
  }
}

void Store::insert_locked(StoreSnapshot::KeyRef key, ObjectPtr object) {
  for (const auto& [name, function] : index_functions_) {
    auto& by_value = state_.indexes_.find(name)->second;
    for (std::string& value : function(*object)) by_value[std::move(value)].insert(key);
  }
  const ObjectKey& plain_key = *key;
  state_.objects_.insert_or_assign(plain_key,
                                   StoreSnapshot::Entry{std::move(object), std::move(key)});
}

ObjectPtr Store::apply(ObjectPtr object) {
  const ObjectKey key = ObjectKey::of(*object);
  std::unique_lock lock(mutex_);
  ++version_;
  ObjectPtr previous;
  StoreSnapshot::KeyRef key_ref;
  if (const auto found = state_.objects_.find(key); found != state_.objects_.end()) {
    previous = found->second.object;
    key_ref = found->second.key;
    erase_index_locked(found->second);
  } else {
    key_ref = std::make_shared<const ObjectKey>(key);
  }
  insert_locked(std::move(key_ref), std::move(object));
  return previous;
}

ObjectPtr Store::remove(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  const auto found = state_.objects_.find(key);
  if (found == state_.objects_.end()) return nullptr;
  ++version_;
  ObjectPtr previous = found->second.object;
  erase_index_locked(found->second);
  state_.objects_.erase(found);
  return previous;
}

ReplaceResult Store::replace(std::vector<ObjectPtr> objects) {
  ReplaceResult result;
  {
    std::unique_lock lock(mutex_);
    ++version_;
    std::unordered_map<ObjectKey, ObjectPtr, ObjectKeyHash> fresh;
    fresh.reserve(objects.size());
    for (ObjectPtr& object : objects) {
      ObjectKey key = ObjectKey::of(*object);
      fresh.insert_or_assign(std::move(key), std::move(object));
    }
    for (auto it = state_.objects_.begin(); it != state_.objects_.end();) {
      if (fresh.contains(it->first)) {
        ++it;
        continue;
      }
      result.deleted.push_back(it->second.object);
      erase_index_locked(it->second);
      it = state_.objects_.erase(it);
    }
    for (auto& [key, object] : fresh) {
      const auto found = state_.objects_.find(key);
      StoreSnapshot::KeyRef key_ref;
      if (found == state_.objects_.end()) {
        result.added.push_back(object);
        key_ref = std::make_shared<const ObjectKey>(key);
      } else {
        ObjectPtr previous = found->second.object;
        const bool changed = resource_version_of(*previous) != resource_version_of(*object) ||
                             resource_version_of(*object).empty();
        key_ref = found->second.key;
        erase_index_locked(found->second);
        if (changed) result.updated.emplace_back(std::move(previous), object);
      }
      insert_locked(std::move(key_ref), std::move(object));
    }
  }
  {
    std::lock_guard lock(synced_mutex_);
    synced_ = true;
  }
  synced_changed_.notify_all();
  return result;
}

}  // namespace depl::kube
