// The informer cache: the objects of one resource type, keyed by namespace/name, with secondary
// indexes. One writer (the informer applying watch events) and many readers (reconcilers).
// Objects are immutable shared_ptr<const json> values, so a reader keeps what it got while the
// writer moves on (kube-rs's reflector store). Readers hold the lock only to copy pointers;
// snapshot() gives a consistent view across several queries.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/kube/runtime/object_key.hpp"

namespace depl::kube {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// The index values of one object (an object may have none or several). Must be a pure
// function of the object: values are recomputed when the object leaves the index.
using IndexFunction = std::function<std::vector<std::string>(const nlohmann::json&)>;

// Built-in indexes, installed by default_indexes().
namespace indexes {
inline constexpr std::string_view kByLabel = "label";         // "key=value" per label
inline constexpr std::string_view kByOwnerUid = "owner-uid";  // metadata.ownerReferences[].uid
inline constexpr std::string_view kByNodeName = "node-name";  // spec.nodeName (pods)
IndexFunction by_label();
IndexFunction by_owner_uid();
IndexFunction by_node_name();
}  // namespace indexes

std::map<std::string, IndexFunction, std::less<>> default_indexes();

// The state of a store at one moment. Immutable once built; shared between readers.
class StoreSnapshot {
 public:
  ObjectPtr get(const ObjectKey& key) const;  // null when absent
  std::vector<ObjectPtr> list() const;        // every object, in unspecified order
  // Objects whose index `index` contains `value`, ordered by key. Unknown index: empty.
  std::vector<ObjectPtr> by_index(std::string_view index, std::string_view value) const;
  std::size_t size() const { return objects_.size(); }

 private:
  friend class Store;
  // Index entries hold the key by pointer (shared with the object's entry and every snapshot):
  // hashing a pointer is cheap and one key is stored once, however many index values it has.
  using KeyRef = std::shared_ptr<const ObjectKey>;
  struct KeyRefHash {
    std::size_t operator()(const KeyRef& key) const noexcept {
      return std::hash<const ObjectKey*>{}(key.get());
    }
  };
  struct Entry {
    ObjectPtr object;
    KeyRef key;
    // The object's index values are not stored: they are recomputed from the (immutable)
    // object when it leaves the indexes, which saves memory and allocations per object.
  };
  std::unordered_map<ObjectKey, Entry, ObjectKeyHash> objects_;
  // index name -> value -> keys
  std::map<std::string, std::unordered_map<std::string, std::unordered_set<KeyRef, KeyRefHash>>,
           std::less<>>
      indexes_;
};

// What a relist changed, for event handlers.
struct ReplaceResult {
  std::vector<ObjectPtr> added;
  std::vector<std::pair<ObjectPtr, ObjectPtr>> updated;  // old, new
  std::vector<ObjectPtr> deleted;
};

class Store {
 public:
  explicit Store(std::map<std::string, IndexFunction, std::less<>> indexes = default_indexes());
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- Readers (any thread) ---
  ObjectPtr get(const ObjectKey& key) const;
  std::vector<ObjectPtr> list() const;
  std::vector<ObjectPtr> by_index(std::string_view index, std::string_view value) const;
  std::size_t size() const;
  // A consistent immutable view. Built on first request after a change (one copy of the
  // pointers and indexes) and shared by every reader until the next change.
  std::shared_ptr<const StoreSnapshot> snapshot() const;

  // True once the first full list has been applied. Readers should not act on a store that is
  // not synced: an object missing from it may simply not have been listed yet.
  bool synced() const;
  // Blocks until synced or `stop`; returns synced().
  bool wait_synced(std::stop_token stop) const;
  bool wait_synced_for(std::chrono::milliseconds timeout) const;

  // --- The writer (one thread) ---
  // Inserts or replaces by the object's metadata key; returns the previous object (or null).
  ObjectPtr apply(ObjectPtr object);
  // Removes; returns the removed object (or null when it was not there).
  ObjectPtr remove(const ObjectKey& key);
  // Replaces the whole content with a fresh list: objects not in it are deleted, objects whose
  // resourceVersion changed are updated. Marks the store synced.
  ReplaceResult replace(std::vector<ObjectPtr> objects);

 private:
  void insert_locked(StoreSnapshot::KeyRef key, ObjectPtr object);
  void erase_index_locked(const StoreSnapshot::Entry& entry);

  std::vector<std::pair<std::string, IndexFunction>> index_functions_;
  mutable std::shared_mutex mutex_;
  StoreSnapshot state_;
  std::uint64_t version_ = 0;
  mutable std::mutex snapshot_mutex_;
  mutable std::shared_ptr<const StoreSnapshot> snapshot_;
  mutable std::uint64_t snapshot_version_ = UINT64_MAX;

  mutable std::mutex synced_mutex_;
  mutable std::condition_variable_any synced_changed_;
  bool synced_ = false;
};

}  // namespace depl::kube
