// The semantic core of the embedded API server, without HTTP: a registry of served resource
// types and an object store with kube-apiserver semantics (resourceVersions, generation, status
// subresource, pod binding, patches, server-side apply, finalizers, garbage collection, CRDs,
// watches).
//
// Thread-safety: every public member may be called from any thread. One internal mutex
// serialises all reads and every change (so every operation sees and produces a consistent
// state). Create, update, patch and pods/binding compute the object they write (patching,
// defaults, validation, managedFields) with the mutex released, from the object as they read it,
// and take the mutex again to store it only if that object (and its type) is still the stored
// one; otherwise they compute it again with the mutex held. ResourceVersions, watch events and
// write records follow the order in which writes are stored. Watch events are queued into
// WatchSubscriptions under the mutex and their notifiers are called after it is released, so a
// notifier (or a consumer thread) may call back into the store. Write hooks are also called after
// the mutex is released.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_result.hpp"
#include "depl/devcluster/resource_type.hpp"
#include "depl/devcluster/watch_subscription.hpp"

namespace depl::devcluster {

// The target of a request: /api/v1/namespaces/<ns>/<plural>/<name>/<subresource> or
// /apis/<group>/<version>/... . `ns` empty = cluster-scoped or all namespaces (list/watch);
// `name` empty = the collection. `subresource` is "", "status" or, for create on a pod,
// "binding" (the server handles "log").
struct ResourceRef {
  std::string group;
  std::string version;
  std::string plural;
  std::string ns;
  std::string name;
  std::string subresource;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::int64_t limit = 0;  // 0 = no limit
  std::string continue_token;
  // "" = most recent; "0" = any; else NotOlderThan (or Exact with resource_version_match).
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan", "Exact"
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  // "" = current state as ADDED events, then changes; "0" = the same (any state is acceptable);
  // else: every change after that version, or one ERROR 410 if it left the history window.
  std::string resource_version;
  bool allow_bookmarks = false;
  // watch-list: initial ADDED events, then a BOOKMARK with the annotation
  // "k8s.io/initial-events-end": "true" (requires allow_bookmarks).
  bool send_initial_events = false;
  // A test's observer that must see every event (recorders checking invariants): fault
  // injection (close_client_watches, DevCluster::drop_watches) leaves it open.
  bool observer = false;
};

// The options of a test's observer: every event from now on, never dropped by fault injection.
inline WatchOptions observer_watch_options() {
  WatchOptions options;
  options.observer = true;
  return options;
}

// Who writes and how (query parameters and headers of a write request).
struct WriteOptions {
  bool dry_run = false;          // dryRun=All: validate and answer, store nothing
  std::string field_manager;     // fieldManager; required for apply
  std::string field_validation;  // "Strict" (400 on unknown fields), "Warn", "Ignore" ("" = Warn)
  bool force = false;            // apply: take ownership of conflicting fields
  std::string user_agent;        // recorded; the default field manager is derived from it
  // A successful create, update, patch or apply answers with ApiResult::object (the stored
  // object, shared) and leaves `body` null, instead of copying the object into `body`: for
  // callers that only serialize the answer (the HTTP handler) or only look at its code (the
  // simulated kubelet and scheduler). A pod is a few KB of JSON; the copy and its destruction
  // were ~8% of the CPU of the scale bench's burst.
  bool shared_answer = false;
  // Fields the request body sent twice ("metadata.name"), as the server's decoder found them:
  // refused with Strict, a warning with Warn, as unknown fields are.
  std::vector<std::string> duplicate_fields;
};

struct DeleteOptions {
  std::string propagation_policy;  // "Background" (default), "Foreground", "Orphan"
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<std::int64_t> grace_period_seconds;
  bool dry_run = false;
  std::string user_agent;
};

enum class PatchType { Merge, Json, Strategic, Apply };
// application/merge-patch+json, application/json-patch+json,
// application/strategic-merge-patch+json, application/apply-patch+yaml (and +cbor is not).
std::optional<PatchType> patch_type_from_content_type(std::string_view content_type);

// One write that changed (or, for dry runs, would have changed) the store, for HA tests that
// ask "who wrote what".
struct WriteRecord {
  std::string verb;  // create, update, patch, delete, deletecollection (binding: create)
  std::string api_version;
  std::string plural;
  std::string subresource;
  std::string ns;
  std::string name;
  std::string field_manager;
  std::string user_agent;
  std::string resource_version;  // after the write
  int code = 0;                  // the answer's HTTP code
  // When the store applied it (steady clock, under the store lock: ordered like the writes).
  std::chrono::steady_clock::time_point time{};
};

struct StoreOptions {
  // Watch history kept for watches that resume from a resourceVersion.
  std::size_t history_window = 10000;
  // Injected clock (creationTimestamp, deletionTimestamp, Table ages).
  std::function<std::chrono::system_clock::time_point()> now = [] {
    return std::chrono::system_clock::now();
  };
  // Pods bound to a node (spec.nodeName set) are deleted gracefully: a delete with a grace
  // period > 0 only sets deletionTimestamp/deletionGracePeriodSeconds, and the kubelet finishes
  // with a delete with gracePeriodSeconds=0. Off = pods go at once (no kubelet running).
  bool graceful_pod_deletion = false;
  // Seed for uids and generateName suffixes.
  std::uint64_t seed = 1;
  // Test seam: called with the store unlocked when a create, update, patch or pods/binding has
  // computed its write from the state it read and is about to store it; a write the callback
  // makes to the same object sends the first one round again (with the lock held throughout).
  std::function<void(const ResourceRef&)> before_commit;
  // Plays Kueue's pod webhook: a pod created with the kueue.x-k8s.io/queue-name label gets the
  // kueue.x-k8s.io/admission scheduling gate and the kueue.x-k8s.io/managed=true label. Nothing
  // admits it: whoever plays the queue (a test, a person) removes the gate, as Kueue does when it
  // admits the pod's group.
  bool kueue_pod_webhook = false;
  // Serves Kubernetes' Workload and PodGroup API (scheduling.k8s.io/v1beta1), as kube-apiserver
  // does with the GenericWorkload feature gate and that group-version enabled.
  bool workload_scheduling = false;
};

class ApiStore {
 public:
  explicit ApiStore(StoreOptions options = {});
  ~ApiStore();
  ApiStore(const ApiStore&) = delete;
  ApiStore& operator=(const ApiStore&) = delete;

  // ---- registry --------------------------------------------------------------------------
  // Every served resource type (built-ins and custom resources' served versions), in
  // registration order: what discovery serves.
  std::vector<ResourceType> resource_types() const;
  // Null when not served. The type as it is now: a later CRD change replaces it, never alters it.
  std::shared_ptr<const ResourceType> find_type(const std::string& group,
                                                const std::string& version,
                                                const std::string& plural) const;
  // Incremented whenever a CRD adds, changes or removes served types (discovery caches).
  std::uint64_t registry_generation() const;

  // ---- requests ----------------------------------------------------------------------------
  // Results: 200/201 with the object (or list), else a meta/v1 Status with the apiserver's code,
  // reason and wording. Custom resources are returned with their schema defaults applied.
  ApiResult get(const ResourceRef& ref) const;
  // Lists carry metadata.resourceVersion; with `limit`, metadata.continue and
  // remainingItemCount. Continue tokens expire (410) only after compact().
  ApiResult list(const ResourceRef& ref, const ListOptions& options = {}) const;
  // POST (201). Types with a status subresource drop .status on create (pods start with
  // status.phase=Pending), except nodes and CRDs; write status through "status" afterwards.
  // Creating a CRD serves its versions at once and sets Established/NamesAccepted.
  // pods/<name>/binding (ref.subresource == "binding") takes a v1 Binding and, as kube-apiserver
  // does, sets the pod's spec.nodeName (target.name) and PodScheduled=True in one write, then
  // answers 201 with a Success Status; 409 when the pod is bound already or being deleted.
  ApiResult create(const ResourceRef& ref, nlohmann::json body, const WriteOptions& options = {});
  // PUT: replace the object (or its status with ref.subresource == "status"). A stale
  // metadata.resourceVersion answers 409; an update that changes nothing answers 200 with the
  // unchanged object and no new resourceVersion or watch event.
  ApiResult update(const ResourceRef& ref, nlohmann::json body, const WriteOptions& options = {});
  // PATCH; `body` is the raw request body (apply bodies may be YAML or JSON).
  ApiResult patch(const ResourceRef& ref, PatchType type, std::string_view body,
                  const WriteOptions& options = {});
  // DELETE: 200 with the object as it was removed, or with deletionTimestamp set when
  // finalizers (or a foreground deletion, a terminating namespace, a graceful bound pod) keep it.
  // Dependents are garbage-collected in the same call (see store_delete.cpp).
  ApiResult remove(const ResourceRef& ref, const DeleteOptions& options = {});
  ApiResult remove_collection(const ResourceRef& ref, const ListOptions& selection,
                              const DeleteOptions& options = {});

  // Opens a watch. Bad selectors/unknown resources answer with an error result; a too-old
  // resourceVersion gives a subscription holding one ERROR event (Status 410) that is closed.
  Expected<std::shared_ptr<WatchSubscription>, ApiResult> watch(const ResourceRef& ref,
                                                                const WatchOptions& options);

  // ---- server hooks --------------------------------------------------------------------------
  // Sends a BOOKMARK with the current resourceVersion to every watch that allowed bookmarks
  // (the server calls this periodically, e.g. every minute, and tests call it directly).
  void send_bookmarks();
  // Forgets the whole watch history: any watch resuming from an older version gets 410.
  void compact();
  // Closes every open watch (clients must re-watch).
  void close_all_watches();
  // The same, but leaves observers (WatchOptions::observer) open.
  void close_client_watches();
  // The current global resourceVersion (decimal).
  std::string resource_version() const;
  // Called after every successful write (and dry run), outside the store lock.
  void set_write_recorder(std::function<void(const WriteRecord&)> recorder);

  // Opaque state (declared public only so the implementation files can name it).
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::devcluster
