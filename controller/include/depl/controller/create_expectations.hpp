// The pods and services a job's reconcile created that the informers have not shown yet
// ("expectations", as the Kubernetes Job and ReplicaSet controllers keep them).
//
// A reconcile decides from the informer caches. Right after it created a job's pods, the job's
// own status write comes back through the jobs watch, often before the pods watch shows the pods:
// a reconcile then would find no pods, start the round again (a second PhaseStarted, the round
// counted twice against the NoProgress bound) and create the pods again (AlreadyExists). With
// expectations the reconciler waits until every object it created has been seen: an informer
// event for it, or the object in the caches when the reconciler looks (pending()'s `in_cache`).
// The events enqueue the job; the reconciler also looks again every second while it waits.
// Expectations expire after `ttl` (as the Job controller's, 5 minutes), in case an object was
// created and deleted before any watch saw it.
//
// It also keeps, per job, the round whose pods the API server refused to create, so that the
// retry creates them without starting the round again (JobView::round_without_pods); erase()
// forgets both.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/kube/runtime/informer.hpp"

namespace depl::controller {

class CreateExpectations {
 public:
  static constexpr std::chrono::minutes kDefaultTtl{5};

  explicit CreateExpectations(Clock& clock, Clock::Duration ttl = kDefaultTtl);

  // Before creating `kind` `ns`/`name` for the job with uid `owner`.
  void expect(const std::string& owner, const std::string& kind, const std::string& ns,
              const std::string& name);
  // The create failed (other than AlreadyExists): no event will show it.
  void forget(const std::string& owner, const std::string& kind, const std::string& ns,
              const std::string& name);
  // An informer showed `object` of `kind` (added, updated or deleted).
  void observed(const std::string& kind, const nlohmann::json& object);
  // The job with uid `owner` is gone.
  void erase(const std::string& owner);

  // nullopt when everything created for `owner` has been seen (or the expectations expired);
  // otherwise how many objects are still awaited and how long until they expire. `in_cache`,
  // when given, is asked about each awaited object (kind, namespace, name): one the caches hold
  // counts as seen, whatever became of its event.
  struct Pending {
    std::size_t objects = 0;
    Clock::Duration expires_in{};
  };
  using InCache =
      std::function<bool(const std::string& kind, const std::string& ns, const std::string& name)>;
  std::optional<Pending> pending(const std::string& owner, const InCache& in_cache = {});

  // The round of a phase the reconciler started and whose pod creates the API server refused
  // (JobView::round_without_pods), kept until the round's pods are created; nullopt clears it.
  void set_round_without_pods(const std::string& owner, std::optional<JobView::Round> round);
  std::optional<JobView::Round> round_without_pods(const std::string& owner);

  // Handlers for the informer of `kind` ("Pod", "Service"): every event is an observation. Add
  // them before the controller's, so the reconcile a pod event starts finds it observed.
  kube::ResourceEventHandlers handlers(const std::string& kind);

 private:
  struct Awaited {
    std::set<std::tuple<std::string, std::string, std::string>> objects;  // kind, ns, name
    Clock::TimePoint expires{};
  };
  Clock& clock_;
  Clock::Duration ttl_;
  std::mutex mutex_;
  std::map<std::string, Awaited, std::less<>> by_owner_;
  std::map<std::string, JobView::Round, std::less<>> refused_rounds_;
};

}  // namespace depl::controller
