// The line jobs are placed in: every job in creation order (creationTimestamp, then namespace
// and name) with what placement needs to know of it, kept up to date from the jobs informer's
// events. A job's first plan waits for every earlier job that may still claim capacity but has
// no plan yet, and counts the GPUs earlier jobs were promised but do not hold yet. Answering
// that by scanning every cached job on every reconcile made a burst of jobs cost O(jobs^2) map
// lookups; here a reconcile reads small structs.
//
// Thread-safety: one writer (the informer thread, through the handlers), many readers.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
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

class PlacementLine {
 public:
  // Handlers to add to the jobs informer before any that enqueue work.
  kube::ResourceEventHandlers handlers();

  void put(const nlohmann::json& job);
  void remove(const nlohmann::json& job);

  // "namespace/name" of a job created before `job` that awaits its first plan, or "".
  std::string unplanned_before(const nlohmann::json& job) const;
  // The job whose turn it is: the earliest that awaits its first plan.
  std::optional<kube::ObjectKey> next() const;
  // GPUs promised to jobs created before `job` (Pending or Running, with a plan) whose pods do
  // not hold them yet: the phase in force needs workers x gpusPerWorker in its pool, less what
  // the job's pods hold now (`gpus`).
  std::vector<Reservation> reservations_before(const nlohmann::json& job,
                                               const GpuLedger& gpus) const;

 private:
  using Rank = std::tuple<std::string, std::string, std::string>;  // created, namespace, name
  struct Entry {
    std::string uid;
    bool awaits_first_plan = false;
    std::string pool;  // of the phase in force; "" when it reserves nothing
    int gpus = 0;      // the phase in force needs (workers x gpusPerWorker)
  };
  static Rank rank_of(const nlohmann::json& job);

  mutable std::mutex mutex_;
  std::map<Rank, Entry> line_;
  std::unordered_map<std::string, Rank> by_key_;  // "namespace/name" -> its place in line_
  std::set<Rank> awaiting_;
};

}  // namespace depl::controller
