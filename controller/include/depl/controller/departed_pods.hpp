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
// A pod deleted while no controller watched (all replicas down) is not seen at all: holding every
// worker with a finalizer until its preemption was counted would cover that case too, at the
// price of a write per pod deletion, and of pods left Terminating whenever the controller is not
// running (a namespace or job deletion waits for it).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
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

  // The pods informer delivered the deletion of `pod` (its final object). Kept when a
  // DependableTrainingJob controls it and it had not succeeded; one without a deletionTimestamp
  // (deleted at once, grace period 0) gets the time it was seen gone, for it has ended.
  void departed(const nlohmann::json& pod);

  // The departed pods of the job with uid `owner` whose uids `recorded` (the job's
  // status.failedPods) does not list yet, oldest first. Those it lists, and expired ones, are
  // forgotten.
  std::vector<nlohmann::json> of(const std::string& owner,
                                 const std::vector<std::string>& recorded);

  // The job with uid `owner` is gone.
  void erase(const std::string& owner);

  // Handlers for the pods informer (deletions only). Add them before the controller's, so the
  // reconcile a deletion starts finds the pod here.
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
};

}  // namespace depl::controller
