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
  matches.reserve(found_value->second.size());
  for (const ObjectKey& key : found_value->second) matches.push_back(get(key));
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

void Store::erase_index_locked(const ObjectKey& key, const StoreSnapshot::Entry& entry) {
  for (std::size_t i = 0; i < index_functions_.size(); ++i) {
    auto& by_value = state_.indexes_.find(index_functions_[i].first)->second;
    for (const std::string& value : entry.index_values[i]) {
      const auto found = by_value.find(value);
      if (found == by_value.end()) continue;
      found->second.erase(key);
      if (found->second.empty()) by_value.erase(found);
    }
  }
}

void Store::insert_locked(const ObjectKey& key, ObjectPtr object) {
  StoreSnapshot::Entry entry;
  entry.index_values.reserve(index_functions_.size());
  for (const auto& [name, function] : index_functions_) {
    entry.index_values.push_back(function(*object));
    auto& by_value = state_.indexes_.find(name)->second;
    for (const std::string& value : entry.index_values.back()) by_value[value].insert(key);
  }
  entry.object = std::move(object);
  state_.objects_.insert_or_assign(key, std::move(entry));
}

ObjectPtr Store::apply(ObjectPtr object) {
  const ObjectKey key = ObjectKey::of(*object);
  std::unique_lock lock(mutex_);
  ++version_;
  ObjectPtr previous;
  if (const auto found = state_.objects_.find(key); found != state_.objects_.end()) {
    previous = found->second.object;
    erase_index_locked(key, found->second);
  }
  insert_locked(key, std::move(object));
  return previous;
}

ObjectPtr Store::remove(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  const auto found = state_.objects_.find(key);
  if (found == state_.objects_.end()) return nullptr;
  ++version_;
  ObjectPtr previous = found->second.object;
  erase_index_locked(key, found->second);
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
      erase_index_locked(it->first, it->second);
      it = state_.objects_.erase(it);
    }
    for (auto& [key, object] : fresh) {
      const auto found = state_.objects_.find(key);
      if (found == state_.objects_.end()) {
        result.added.push_back(object);
      } else {
        ObjectPtr previous = found->second.object;
        const bool changed = resource_version_of(*previous) != resource_version_of(*object) ||
                             resource_version_of(*object).empty();
        erase_index_locked(key, found->second);
        if (changed) result.updated.emplace_back(std::move(previous), object);
      }
      insert_locked(key, std::move(object));
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
