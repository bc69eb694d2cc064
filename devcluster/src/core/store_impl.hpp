// Internal state of ApiStore, shared by the files that implement it (reads and watches, writes,
// deletion and garbage collection). Every member function here runs with `mutex` held, except
// the static ones and the const `prepare_*` functions: those read only their arguments and
// immutable configuration, so writes run them with the lock released (store_write_path.cpp).
#pragma once

#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>

#include "depl/devcluster/api_store.hpp"
#include "depl/devcluster/selectors.hpp"

namespace depl::devcluster {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// One change in the watch history, stored in storage form (core/v1 for events).
struct HistoryEvent {
  std::uint64_t rv = 0;
  std::string storage_key;
  std::string type;  // ADDED, MODIFIED, DELETED
  ObjectPtr object;
  ObjectPtr previous;  // MODIFIED: the object before (selector transitions)
};

struct Watcher {
  std::shared_ptr<WatchSubscription> subscription;
  ResourceType type;
  std::string ns;
  LabelSelector labels;
  FieldSelector fields;
  bool bookmarks = false;
  bool observer = false;  // WatchOptions::observer
};

// Everything an operation produced that must be handed out after the lock is released.
struct PendingEffects {
  std::vector<std::shared_ptr<WatchSubscription>> notify;
  std::vector<WriteRecord> records;
  // Events pushed out of the history window. Their objects are often the last references to old
  // versions (a pod's few KB of JSON): freed with these effects, after the lock is released,
  // instead of under it at every write once the window is full.
  std::vector<HistoryEvent> retired;
};

// What a write request comes to, computed from the object as it was when the request read it
// (`current`, possibly null): an answer without a write (errors, no-ops, dry runs), the object that
// replaces `current`, or an object to create (a PUT or apply to a missing object).
struct PreparedWrite {
  enum class Kind { Answer, Replace, Create };
  Kind kind = Kind::Answer;
  ApiResult answer;         // Answer; Replace on pods/binding (its Success Status)
  nlohmann::json object;    // Replace: the next object (client form); Create: the request's body
  bool finalized = false;   // Replace: the last finalizer goes, so the write is the deletion
  bool from_apply = false;  // Create
  std::vector<std::string> warnings;
};

// A create computed before the lock (prepare_create): everything but what depends on the store's
// state (namespace, name taken, uid, creationTimestamp, resourceVersion).
struct PreparedCreate {
  std::optional<ApiResult> answer;   // an error found before the store's state is looked at
  std::optional<ApiResult> refusal;  // admission's error, reported after the state's errors
  nlohmann::json object;             // client form, without uid and creationTimestamp
  std::string name;
  std::vector<std::string> warnings;
};

struct ApiStore::Impl {
  explicit Impl(StoreOptions options);

  StoreOptions options;
  mutable std::mutex mutex;
  std::mt19937_64 random;

  // Registry: built-ins first, then CRD-defined types in the order CRDs were established. A CRD
  // write replaces its types: a request holding one (shared_type) keeps it as it was.
  std::vector<std::shared_ptr<const ResourceType>> types;
  std::map<std::string, std::vector<ResourceType>> crd_types;  // CRD name -> its types
  std::uint64_t registry_generation = 1;

  // Objects by storage key, then "<ns>/<name>".
  std::map<std::string, std::map<std::string, ObjectPtr>> storage;
  // uid -> (storage key, object key), for ownerReferences.
  std::unordered_map<std::string, std::pair<std::string, std::string>> by_uid;
  // owner uid -> dependent uids.
  std::unordered_map<std::string, std::set<std::string>> dependents;

  std::uint64_t rv = 1;
  std::deque<HistoryEvent> history;
  std::uint64_t compacted_rv = 0;           // events with rv <= this are gone
  std::uint64_t continue_compacted_rv = 0;  // continue tokens older than this are expired
  std::list<Watcher> watchers;
  PendingEffects pending;
  std::function<void(const WriteRecord&)> recorder;
  std::uint32_t next_cluster_ip = 10;
  // Namespaces whose contents are being deleted right now (finalize_namespace re-enters itself
  // through the removals it causes; the outermost call finishes).
  std::set<std::string> finalizing_namespaces;

  // ---- helpers (store_impl.cpp) ----------------------------------------------------------
  const ResourceType* find_type(const std::string& group, const std::string& version,
                                const std::string& plural) const;
  std::shared_ptr<const ResourceType> shared_type(const std::string& group,
                                                  const std::string& version,
                                                  const std::string& plural) const;
  const ResourceType* storage_type(const std::string& storage_key) const;  // any version
  std::string now_text() const;
  std::string new_uid();
  static std::string object_key(const std::string& ns, const std::string& name) {
    return ns + "/" + name;
  }
  ObjectPtr lookup(const std::string& storage_key, const std::string& key) const;
  // Storage form -> what clients of `type` see (events.k8s.io conversion, CR apiVersion,
  // defaults of the CR schema). Needs no lock.
  static ObjectPtr present(const ResourceType& type, const ObjectPtr& stored);
  // The answer of a write that stored (or, dry run, would store) `stored`: presented, and
  // shared in ApiResult::object or copied into ApiResult::body as `options.shared_answer` asks.
  static ApiResult object_answer(int code, const ResourceType& type, const ObjectPtr& stored,
                                 const WriteOptions& options, std::vector<std::string> warnings);
  // Client form -> storage form. Needs no lock.
  static nlohmann::json to_storage(const ResourceType& type, nlohmann::json object);

  // Writes with history, watch fan-out and indexes. `object` must carry its new RV already.
  void put(const std::string& storage_key, const std::string& key, ObjectPtr object,
           const ObjectPtr& previous);
  void erase(const std::string& storage_key, const std::string& key, const ObjectPtr& last);
  void record_event(HistoryEvent event);
  std::uint64_t next_rv() { return ++rv; }
  void set_rv(nlohmann::json& object, std::uint64_t version) const;

  // ---- reads and watches (api_store.cpp) ----
  ApiResult get(const ResourceRef& ref) const;
  ApiResult list(const ResourceRef& ref, const ListOptions& options) const;
  Expected<std::shared_ptr<WatchSubscription>, ApiResult> watch(const ResourceRef& ref,
                                                                const WatchOptions& options);

  // ---- writes (store_writes.cpp) ----
  // The whole create with the lock held: generated names, Services' cluster IPs, client-sent
  // managedFields, and creates a PUT or an apply turned into.
  ApiResult create(const ResourceType& type, const ResourceRef& ref, nlohmann::json body,
                   const WriteOptions& options, bool from_apply = false);
  // Whether prepare_create may compute `body`'s create before the lock (create() otherwise).
  static bool can_prepare_create(const ResourceType& type, const nlohmann::json& body);
  // The part of create() that needs no store state, for a body can_prepare_create accepts.
  PreparedCreate prepare_create(const ResourceType& type, const ResourceRef& ref,
                                nlohmann::json body, const WriteOptions& options,
                                const std::string& now) const;
  // The rest of create() (lock held): the same answer create() gives for the same body.
  ApiResult commit_create(const ResourceType& type, const ResourceRef& ref, PreparedCreate prepared,
                          const WriteOptions& options, const std::string& now, ObjectPtr& created);
  // Why a create of `name` (stored under `key`) cannot go ahead whatever its body (lock held):
  // its namespace is missing or being deleted, or the name is taken.
  std::optional<ApiResult> refuse_create(const ResourceType& type, const ResourceRef& ref,
                                         const std::string& name, const std::string& key) const;
  // The end of every create (lock held): stores `body` under `key` with the next
  // resourceVersion, records the write, and lets the garbage collector look at the new object's
  // owners. Returns the object `key` holds afterwards, or the stored one if the collector has
  // deleted it already.
  ObjectPtr store_created(const ResourceType& type, const ResourceRef& ref, const std::string& name,
                          const std::string& key, nlohmann::json body, const WriteOptions& options);
  PreparedWrite prepare_update(const ResourceType& type, const ResourceRef& ref,
                               const ObjectPtr& current, nlohmann::json body,
                               const WriteOptions& options, const std::string& now) const;
  // `patch` is the parsed request body, or the error its parsing gave.
  PreparedWrite prepare_patch(const ResourceType& type, const ResourceRef& ref,
                              const ObjectPtr& current, PatchType patch_type,
                              const Expected<nlohmann::json, ApiResult>& patch,
                              const WriteOptions& options, const std::string& now) const;
  // The shared tail of update and patch: `next` is the client-form object the request wants.
  PreparedWrite prepare_replace(const ResourceType& type, const ResourceRef& ref,
                                const ObjectPtr& current, nlohmann::json next,
                                const WriteOptions& options, bool check_rv,
                                bool managed_fields_done, const std::string& now) const;
  // Stores a Replace of update/patch over `current` (which must still be stored); returns the
  // stored object.
  ObjectPtr commit_replace(const ResourceType& type, const ResourceRef& ref,
                           const ObjectPtr& current, PreparedWrite& prepared,
                           const WriteOptions& options);
  // A PreparedWrite of update/patch carried out with the lock held since `current` was read.
  ApiResult finish_locked(const ResourceType& type, const ResourceRef& ref,
                          const ObjectPtr& current, PreparedWrite prepared,
                          const WriteOptions& options);
  // Pruning, defaulting and validation of custom resources and CRDs, validation of the built-in
  // kinds builtin_validation.hpp checks; nullopt when fine.
  // Built-in kinds: strict field validation against their schemas (unknown fields pruned,
  // refused with fieldValidation=Strict), and on update (`old` set) what may not change.
  static std::optional<ApiResult> admit(const ResourceType& type, nlohmann::json& object,
                                        const WriteOptions& options,
                                        std::vector<std::string>& warnings,
                                        const nlohmann::json* old = nullptr);
  // What follows a write of `object` (lock held; `deleted`: it was removed): a CRD's types are
  // (un)registered and its status written, a namespace gets its default service account.
  void after_write(const ResourceType& type, const nlohmann::json& object, bool deleted);
  // A CRD was written; `going`: removed or being deleted, so its resource is no longer served.
  void crd_written(const ResourceType& type, const nlohmann::json& crd, bool going);
  // Removes the types `crd_name` registered from the registry; returns them.
  std::vector<ResourceType> unregister_crd_types(const std::string& crd_name);
  // Removes every object stored under `storage_key` and ends its watches after their DELETED
  // events.
  void stop_serving(const std::string& storage_key);
  // The service account controller's "default" account in a namespace that lacks it.
  void add_default_service_account(const std::string& namespace_name);

  // ---- pods/binding (store_binding.cpp) ----
  // `pods` is the core/v1 pods type; `binding` the request body (a v1 Binding). A Replace
  // carries the Success Status to answer once committed.
  PreparedWrite prepare_bind(const ResourceType& pods, const ResourceRef& ref,
                             const ObjectPtr& current, nlohmann::json binding,
                             const WriteOptions& options, const std::string& now) const;
  void commit_bind(const ResourceType& pods, const ResourceRef& ref, const ObjectPtr& current,
                   PreparedWrite& prepared, const WriteOptions& options);

  // ---- deletion and garbage collection (store_delete.cpp) ----
  ApiResult remove(const ResourceType& type, const ResourceRef& ref, const DeleteOptions& options);
  // Marks (deletionTimestamp) or removes an object; returns what the object became (null if
  // removed now).
  ObjectPtr delete_object(const std::string& storage_key, const std::string& key,
                          const std::string& policy, std::optional<std::int64_t> grace);
  void remove_now(const std::string& storage_key, const std::string& key);
  // Removes the object with `last` (already at its new resourceVersion) as the DELETED state,
  // then runs the CRD hook and the garbage collector for its dependents, owners and namespace.
  void remove_with(const std::string& storage_key, const std::string& key, const ObjectPtr& last);
  void orphan_dependents(const std::string& owner_uid);
  void collect_garbage(std::vector<std::string> dependents_of, std::vector<std::string> owners,
                       std::set<std::string> namespaces);
  void finalize_namespace(const std::string& name);

  void record_write(const std::string& verb, const ResourceType& type, const ResourceRef& ref,
                    const std::string& manager, const std::string& user_agent, int code);
};

// Runs `operation` under the store lock, then hands out watch notifications and write records.
template <typename F>
auto locked(ApiStore::Impl& impl, F&& operation) {
  PendingEffects effects;
  std::function<void(const WriteRecord&)> recorder;
  auto result = [&] {
    std::lock_guard lock(impl.mutex);
    auto r = operation();
    effects = std::move(impl.pending);
    impl.pending = {};
    recorder = impl.recorder;
    return r;
  }();
  std::set<WatchSubscription*> seen;
  for (const auto& s : effects.notify) {
    if (seen.insert(s.get()).second) s->notify();
  }
  if (recorder) {
    for (const auto& r : effects.records) recorder(r);
  }
  return result;
}

// metadata.uid of a stored object ("" when it has none).
std::string uid_of(const nlohmann::json& object);

// Errors shared by the implementation files.
ApiResult unknown_resource();
ApiResult method_not_supported(const ResourceType& type, const std::string& verb);
std::string default_manager(const WriteOptions& options);
// kube-apiserver's check of a body's apiVersion and kind against what the URL serves (filling
// them in, and an empty metadata, when missing); nullopt when the body fits.
std::optional<ApiResult> check_kind(const std::string& api_version, const std::string& kind,
                                    nlohmann::json& body);
// The uid and resourceVersion preconditions of a write (DeleteOptions.preconditions, a Binding's
// metadata): 409 Conflict naming the one that failed, nullopt when both hold or are unset.
std::optional<ApiResult> check_preconditions(const ResourceType& type, const ResourceRef& ref,
                                             const nlohmann::json& current,
                                             const std::optional<std::string>& uid,
                                             const std::optional<std::string>& resource_version);

// Whether apply_schema_defaults would change `object` (structural_schema.cpp): presenting a
// custom resource copies it only then.
bool lacks_schema_defaults(const nlohmann::json& object, const nlohmann::json& schema);

// Per-kind defaults on create (pods, services, namespaces, secrets, deployments). `now` (RFC 3339)
// stamps the conditions they set: a pod created with scheduling gates gets PodScheduled=False,
// reason SchedulingGated.
void apply_builtin_defaults(const ResourceType& type, nlohmann::json& object,
                            std::uint32_t& next_ip, const std::string& now);
// What Kueue's pod webhook does to a pod created on a queue (StoreOptions::kueue_pod_webhook).
void apply_kueue_pod_webhook(const ResourceType& type, nlohmann::json& object);
// events.k8s.io/v1 <-> core/v1 Event.
nlohmann::json event_to_events_v1(const nlohmann::json& core);
nlohmann::json events_v1_to_event(const nlohmann::json& v1);

}  // namespace depl::devcluster
