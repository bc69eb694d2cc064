// The last state the pods informer showed of each deleted worker pod of a job, kept until the
// job's status has recorded the pod (status.failedPods), so that a preemption is counted even when
// its pod is gone before a reconcile that counted it wrote the status.
//
// A reclaimed node's pod can be deleted a moment after it was disrupted: the worker checkpoints
// and exits on SIGTERM, the kubelet finalises the pod, the node goes and the pod garbage
// collector removes what is left. A reconcile that saw the pod terminating may lose its status
// write to a conflict (workers' progress reports write the status too); the next one, from the
// caches, would find no pod to count. The final object the informer delivers with the deletion
// (what the API server last held, or the cache's copy for a deletion seen only on a relist) says
// what ended the pod: decide() counts it (JobView::departed_pods) once per pod uid, and the
// status write that follows persists it. An entry goes when the job's status lists its uid, when
// it expires (`ttl`; a pod nothing counts, such as one the controller deleted itself, is kept
// that long), or with its job.
//
// A worker that failed on its own (its container exited non-zero, no disruption) and whose pod
// was deleted before a status write recorded the failure counts against backoffLimit all the
// same. Its final object cannot say so by itself: a pod deleted while running (the controller
// stopping a round's peers, a user) also ends Failed when its worker exits 143 on SIGTERM. So the
// store also follows the pods' updates and remembers the workers it saw Failed with no deletion
// requested; one of them, or one whose final object is Failed with no deletionTimestamp (the API
// server deletes a pod that has ended at once), is kept as it was when it failed: Failed, with
// no deletionTimestamp, which decide() counts as the failure it was.
//
// A pod deleted while no controller watched (all replicas down) is not seen at all: holding every
// worker with a finalizer until its preemption was counted would cover that case too, at the
// price of a write per pod deletion, and of pods left Terminating whenever the controller is not
// running (a namespace or job deletion waits for it).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/kube/runtime/informer.hpp"

namespace depl::controller {

class DepartedPods {
 public:
  static constexpr std::chrono::minutes kDefaultTtl{5};
  // Per job, the most pods kept (the oldest go first): a bound for a job whose pods are deleted
  // in bulk, far above a phase's workers times the rounds a reconcile can fall behind.
  static constexpr std::size_t kMaxPerJob = 256;

  explicit DepartedPods(Clock& clock, Clock::Duration ttl = kDefaultTtl);

  // Per job, the most uids of workers seen Failed that are remembered until their deletion (the
  // oldest go first): a failed worker is normally deleted when its round restarts.
  static constexpr std::size_t kMaxFailedSeen = 4096;

  // The pods informer delivered `pod` (added or updated): a worker of a job seen Failed with no
  // deletionTimestamp is remembered as failed on its own until its deletion.
  void seen(const nlohmann::json& pod);

  // The pods informer delivered the deletion of `pod` (its final object). Kept when a
  // DependableTrainingJob controls it and it had not succeeded. A worker that failed before its
  // deletion was requested (seen() saw it Failed, or its final object is Failed with no
  // deletionTimestamp) is kept with no deletionTimestamp; any other without one (deleted at
  // once, grace period 0) gets the time it was seen gone, for it has ended.
  void departed(const nlohmann::json& pod);

  // The departed pods of the job with uid `owner` whose uids `recorded` (the job's
  // status.failedPods) does not list yet, oldest first. Those it lists, and expired ones, are
  // forgotten.
  std::vector<nlohmann::json> of(const std::string& owner,
                                 const std::vector<std::string>& recorded);

  // The job with uid `owner` is gone.
  void erase(const std::string& owner);

  // Handlers for the pods informer (additions and updates to seen(), deletions to departed()).
  // Add them before the controller's, so the reconcile a deletion starts finds the pod here.
  kube::ResourceEventHandlers handlers();

 private:
  struct Departed {
    std::string uid;
    nlohmann::json pod;
    Clock::TimePoint expires{};
  };
  Clock& clock_;
  Clock::Duration ttl_;
  std::mutex mutex_;
  std::map<std::string, std::vector<Departed>, std::less<>> by_owner_;
  // Uids of workers seen Failed and not deleted yet, with the order they were seen in.
  std::map<std::string, std::uint64_t, std::less<>> failed_seen_;
  std::uint64_t seen_count_ = 0;
};

}  // namespace depl::controller
