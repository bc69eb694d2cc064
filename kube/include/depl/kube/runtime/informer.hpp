// An informer: a Watcher feeding a Store on its own thread, plus event handlers. This is the
// cache a controller reads from and the source of its work-queue keys. A relist is applied as
// one replace (objects that vanished while we were not watching produce delete events).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <vector>

#include "depl/common/clock.hpp"
#include "depl/common/random.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/store.hpp"
#include "depl/kube/runtime/watcher.hpp"

namespace depl::kube {

// Called on the informer thread, after the store has the new state; keep them short (enqueue a
// key). Any member may be empty.
struct ResourceEventHandlers {
  std::function<void(const ObjectPtr& object)> on_add;
  std::function<void(const ObjectPtr& old_object, const ObjectPtr& new_object)> on_update;
  std::function<void(const ObjectPtr& object)> on_delete;
};

// Rewrites an object before the informer stores it and hands it to handlers (controller-
// runtime's cache transform): dropping what no reader looks at keeps a big cluster's cache
// small. Must keep metadata.name, namespace and resourceVersion, and be a pure function of the
// object.
using ObjectTransform = std::function<void(nlohmann::json& object)>;

// The transform most caches want (controller-runtime's TransformStripManagedFields): drops
// metadata.managedFields, which only server-side apply reads and which can outweigh the rest of
// an object. An update sent without managedFields leaves the server's unchanged.
void strip_managed_fields(nlohmann::json& object);

class Informer {
 public:
  // The client, clock and random source must outlive the informer.
  Informer(Client& client, ResourceType type, WatcherOptions options, Clock& clock,
           RandomSource& random,
           std::map<std::string, IndexFunction, std::less<>> indexes = default_indexes());

  const ResourceType& type() const { return watcher_.type(); }
  Store& store() { return store_; }
  const Store& store() const { return store_; }

  // Thread-safe; handlers added after run() started see only later events.
  void add_handlers(ResourceEventHandlers handlers);
  // Applied to every listed, added, modified and deleted object. Set it before run().
  void set_transform(ObjectTransform transform);

  // Lists, watches and applies until `stop` is requested. Call from one thread only.
  void run(std::stop_token stop);

  // Applies one watcher event to the store and calls the handlers (run() does this; public so a
  // benchmark or test can drive the store without a thread).
  void apply(WatcherEvent event);

 private:
  void notify_add(const ObjectPtr& object);
  void notify_update(const ObjectPtr& old_object, const ObjectPtr& new_object);
  void notify_delete(const ObjectPtr& object);

  Watcher watcher_;
  Store store_;
  ObjectPtr make_object(nlohmann::json&& object) const;

  ObjectTransform transform_;
  std::vector<ObjectPtr> relist_buffer_;
  std::mutex handlers_mutex_;
  std::vector<ResourceEventHandlers> handlers_;
};

}  // namespace depl::kube
