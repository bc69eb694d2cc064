// The line jobs are placed in: every job in creation order (creationTimestamp, then namespace
// and name) with what placement needs to know of it, kept up to date from the jobs informer's
// events. A job's first plan waits for every earlier job that may still claim capacity but has
// no plan yet, and counts the GPUs earlier jobs were promised but do not hold yet. Answering
// that by scanning every cached job on every reconcile made a burst of jobs cost O(jobs^2) map
// lookups; here a reconcile reads small structs.
//
// A job's first plan is also put in by the reconciler that writes it (assume()), before the
// write and the watch bring it back: the next job's turn then does not wait for either, and a
// burst of jobs is placed back to back rather than one per write and watch round trip.
//
// What earlier jobs were promised but do not hold yet is kept up to date as well, from the GPU
// ledger's changes: a reconcile reads the few jobs whose pods are still on their way instead of
// asking the ledger about every job placed before it (O(jobs) per reconcile, most of a burst's
// placement work once a thousand jobs were in line).
//
// A job that had its turn but found no room (Pending, no plan, Planned=False reason Infeasible:
// it waits for capacity) keeps its place: when room may have grown (GPUs freed, a job reserving
// less, a node offering more GPUs: the line's capacity epoch moves), the jobs waiting for capacity are looked at again in
// creation order, and a later job plans only once every earlier one waiting for capacity has been
// looked at since (and could not use the room, or took it). So freed GPUs go to the earliest job
// that can use them, and a job that cannot use them holds back nobody for longer than one look.
//
// Thread-safety: every member takes the line's own lock; writers are the informer threads
// (through the handlers and the ledger's listener) and the reconcilers (assume()). The line asks
// the ledger while holding its lock; the ledger calls the line only after releasing its own.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/controller/gpu_ledger.hpp"
#include "depl/controller/pool_discovery.hpp"
#include "depl/kube/runtime/informer.hpp"
#include "depl/kube/runtime/object_key.hpp"

namespace depl::controller {

// Whether `job` still waits for its turn at placement: not deleted, suspended, finished,
// invalid, or planned either way.
bool awaits_first_plan(const nlohmann::json& job);
// Whether `job` had its turn and found no room: Pending, no plan, Planned=False for Infeasible.
bool waits_for_capacity(const nlohmann::json& job);
// Whether a node's change (`before` null: it was added) may offer plans more GPUs: it offers
// some (in a pool, Ready, not cordoned, not being reclaimed, allocatable GPUs) and offered none
// before, offers more, or changed the labels and annotations that place it and price it. A
// status heartbeat, a node that offers less, or one that goes away never does.
bool node_may_add_room(const nlohmann::json* before, const nlohmann::json& after);

class PlacementLine {
 public:
  // Follows what the pods of each job hold in `gpus` (its change listener is the line's from
  // now on); `gpus` must outlive the line, and the line must outlive the ledger's writers.
  explicit PlacementLine(GpuLedger& gpus);
  PlacementLine(const PlacementLine&) = delete;
  PlacementLine& operator=(const PlacementLine&) = delete;

  // Handlers to add to the jobs informer before any that enqueue work.
  kube::ResourceEventHandlers handlers();
  // Handlers to add to the nodes informer before any that enqueue work: a node that may offer
  // more GPUs moves the capacity epoch, so the jobs waiting for room look again in creation
  // order (node_may_add_room).
  kube::ResourceEventHandlers node_handlers();
  // Room may have grown for a reason the line does not see (e.g. the GPU catalog changed).
  void room_may_have_grown();

  void put(const nlohmann::json& job);
  void remove(const nlohmann::json& job);
  // `job` with the status the reconciler is writing, which ends its wait for a first plan
  // (planned, cannot run now, invalid). Until the informer delivers a version of the job that
  // no longer awaits its first plan, versions that still await it (events from before the
  // write) are older than this one and are ignored.
  void assume(const nlohmann::json& job);
  // The write of an assumed job failed: back to what the informer last delivered for it.
  // `job` (the reconciler's copy) is used only when the informer delivered nothing.
  void forget(const nlohmann::json& job);

  // "namespace/name" of a job created before `job` that awaits its first plan, or that waits for
  // capacity and has not been looked at since the capacity epoch moved; or "".
  std::string unplanned_before(const nlohmann::json& job) const;
  // The job whose turn it is: the earliest that awaits its first plan, or waits for capacity and
  // has not been looked at since the epoch moved.
  std::optional<kube::ObjectKey> next() const;
  // Moves whenever room may have grown: GPUs that pods held were freed, or a job reserves less.
  std::uint64_t capacity_epoch() const;
  // `job` was looked at (planned, or found no room) from a view taken at `epoch`.
  void looked_at(const nlohmann::json& job, std::uint64_t epoch);
  // GPUs promised to jobs created before `job` (Pending or Running, with a plan) whose pods do
  // not hold them yet: the phase in force needs workers x gpusPerWorker in its pool, less what
  // the job's pods hold now (in the ledger).
  std::vector<Reservation> reservations_before(const nlohmann::json& job) const;

 private:
  using Rank = std::tuple<std::string, std::string, std::string>;  // created, namespace, name
  struct Entry {
    std::string uid;
    bool awaits_first_plan = false;
    bool waits_for_capacity = false;
    std::uint64_t looked_at = 0;  // the capacity epoch of its last look (0: none)
    std::string pool;  // of the phase in force; "" when it reserves nothing
    int gpus = 0;      // the phase in force needs (workers x gpusPerWorker)
    int missing = 0;   // of those, what the job's pods do not hold yet
  };
  static Rank rank_of(const nlohmann::json& job);
  static std::string key_of(const Rank& rank);  // "namespace/name"
  static Entry entry_of(const nlohmann::json& job);
  void put_locked(Rank rank, Entry entry);
  void erase_locked(const Rank& rank);
  // Works out `entry.missing` from the ledger and files `rank` among the unfulfilled or not.
  void update_missing_locked(const Rank& rank, Entry& entry);
  void owner_changed(const std::string& uid);

  GpuLedger& gpus_;
  mutable std::mutex mutex_;
  std::map<Rank, Entry> line_;
  std::unordered_map<std::string, Rank> by_key_;  // "namespace/name" -> its place in line_
  std::unordered_map<std::string, Rank> by_uid_;  // job uid -> its place in line_
  std::set<Rank> awaiting_;
  std::set<Rank> waiting_for_capacity_;
  // Moves when room may have grown: GPUs held by some owner went down (held_seen_: what each
  // owner of GPU pods held at the last change), or a job reserves less.
  std::uint64_t capacity_epoch_ = 1;
  std::unordered_map<std::string, int> held_seen_;
  // The earliest job waiting for capacity that has not been looked at in this epoch, if any.
  const Rank* unseen_waiting_locked() const;
  std::set<Rank> unfulfilled_;  // jobs whose pods hold less than the phase in force needs
  struct Assumption {
    std::string uid;
    // What the informer last delivered for the job (restored by forget()).
    std::optional<std::pair<Rank, Entry>> observed;
  };
  std::unordered_map<std::string, Assumption> assumed_;  // by "namespace/name"
};

}  // namespace depl::controller
