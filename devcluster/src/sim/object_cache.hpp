// An in-process informer for the simulated cluster's control loops: keeps the current objects of
// one resource from an ApiStore watch, re-watching (and so relisting) whenever the store closes
// the watch (fault injection, compaction). Used from one thread; `wait` blocks until events may
// be pending, `sync` applies them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

// Wakes a loop thread: several caches (and other event sources) share one.
class LoopSignal {
 public:
  void notify() {
    {
      std::lock_guard lock(mutex_);
      pending_ = true;
    }
    cv_.notify_all();
  }
  // Waits until notified (or `timeout`); clears the flag.
  void wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return pending_; });
    pending_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool pending_ = false;
};

class ObjectCache {
 public:
  using Key = std::string;  // "<namespace>/<name>" or "<name>"
  // The store's object, shared and never modified: a handler keeps it without a copy.
  using ObjectPtr = std::shared_ptr<const nlohmann::json>;
  using Handler = std::function<void(const std::string& type, const ObjectPtr& object)>;
  // `on_event(type, object)` runs inside sync() for every change applied ("ADDED", "MODIFIED",
  // "DELETED"); on a relist, objects gone meanwhile are reported DELETED.
  ObjectCache(ApiStore& store, ResourceRef collection, LoopSignal& signal);
  ~ObjectCache();

  // Applies queued events; opens (or reopens) the watch when needed. Returns true if anything
  // changed.
  bool sync(const Handler& on_event = {});
  // The objects as the store published them (shared, never modified: no copy per event).
  const std::map<Key, ObjectPtr>& objects() const { return objects_; }
  // Local edit after a write of ours, so the next decision sees it before the event arrives.
  void put(nlohmann::json object);

  static Key key_of(const nlohmann::json& object);

 private:
  ApiStore& store_;
  ResourceRef collection_;
  LoopSignal& signal_;
  std::shared_ptr<WatchSubscription> subscription_;
  std::map<Key, ObjectPtr> objects_;
};

}  // namespace depl::devcluster
