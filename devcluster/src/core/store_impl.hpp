// Internal state of ApiStore, shared by the files that implement it (reads and watches, writes,
// deletion and garbage collection). Every member function here runs with `mutex` held.
#pragma once

#include <deque>
#include <list>
#include <map>
#include <mutex>
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
  // defaults of the CR schema).
  ObjectPtr present(const ResourceType& type, const ObjectPtr& stored) const;
  // Client form -> storage form.
  nlohmann::json to_storage(const ResourceType& type, nlohmann::json object) const;

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
  ApiResult create(const ResourceType& type, const ResourceRef& ref, nlohmann::json body,
                   const WriteOptions& options, bool from_apply = false);
  ApiResult update(const ResourceType& type, const ResourceRef& ref, nlohmann::json body,
                   const WriteOptions& options);
  ApiResult patch(const ResourceType& type, const ResourceRef& ref, PatchType patch_type,
                  std::string_view body, const WriteOptions& options);
  // The shared tail of update and patch: `next` is the client-form object the request wants.
  ApiResult write_update(const ResourceType& type, const ResourceRef& ref, const ObjectPtr& current,
                         nlohmann::json next, const WriteOptions& options, bool check_rv,
                         bool managed_fields_done);
  // Pruning, defaulting and validation of custom resources and CRDs, validation of the built-in
  // kinds builtin_validation.hpp checks; nullopt when fine.
  std::optional<ApiResult> admit(const ResourceType& type, nlohmann::json& object,
                                 const WriteOptions& options, std::vector<std::string>& warnings);
  void after_write(const ResourceType& type, const nlohmann::json& object, bool deleted);

  // ---- pods/binding (store_binding.cpp) ----
  // `pods` is the core/v1 pods type; `binding` the request body (a v1 Binding).
  ApiResult bind(const ResourceType& pods, const ResourceRef& ref, nlohmann::json binding,
                 const WriteOptions& options);

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

// Errors shared by the implementation files.
ApiResult unknown_resource();
ApiResult method_not_supported(const ResourceType& type, const std::string& verb);
std::string format_time(std::chrono::system_clock::time_point t);
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

// Per-kind defaults on create (pods, services, namespaces, secrets, deployments).
void apply_builtin_defaults(const ResourceType& type, nlohmann::json& object,
                            std::uint32_t& next_ip);
// events.k8s.io/v1 <-> core/v1 Event.
nlohmann::json event_to_events_v1(const nlohmann::json& core);
nlohmann::json events_v1_to_event(const nlohmann::json& v1);

}  // namespace depl::devcluster
