// Gang scheduling of a phase's workers through the coscheduling plugin of
// kubernetes-sigs/scheduler-plugins: a round of a multi-worker phase gets a PodGroup
// (scheduling.x-k8s.io/v1alpha1) with minMember = its workers, and each worker names it in the
// scheduling.x-k8s.io/pod-group label, so that the scheduler binds all of them or none and no
// partial set holds GPUs while it waits for the rest. Asked by the job (spec.gangScheduling) or by
// the operator (--gang-scheduling); done only where the API server serves the PodGroup API
// (discovery), otherwise the workers are created as without it.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/common/expected.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/resource.hpp"

namespace depl::controller {

inline constexpr const char* kGangLabel = "scheduling.x-k8s.io/pod-group";

inline kube::ResourceType pod_group_resource() {
  return {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true};
}

// Whether the job's workers are to be gang scheduled: spec.gangScheduling when the job sets it,
// else `operator_default`.
bool gang_scheduling_asked(const nlohmann::json& job, bool operator_default);

// The PodGroup of a round of `job`'s workers: named `name` (queue_admission.hpp's
// pod_group_name), in the job's namespace, controlled by the job (so it goes with it), with
// minMember `min_member`.
nlohmann::json build_pod_group(const nlohmann::json& job, const std::string& name, int min_member);

// Puts a worker pod in the PodGroup `name`.
void join_gang(nlohmann::json& pod, const std::string& name);

// Whether a discovery answer for scheduling.x-k8s.io/v1alpha1 (an APIResourceList) lists
// podgroups.
bool lists_pod_groups(const nlohmann::json& resource_list);

// Whether the API server serves the PodGroup API, asked through discovery
// (GET /apis/scheduling.x-k8s.io/v1alpha1) when first needed. "Served" is remembered; "not
// served" (404, or no podgroups listed) for `recheck_after`, so that installing the plugin's CRD
// later takes effect without a restart. Thread-safe.
class PodGroupDiscovery {
 public:
  PodGroupDiscovery(kube::Client& client, Clock& clock,
                    std::chrono::seconds recheck_after = std::chrono::minutes(5));
  // The answer, or an error when the API server could not be asked (the caller tries again).
  Expected<bool> served();

 private:
  kube::Client& client_;
  Clock& clock_;
  const std::chrono::seconds recheck_after_;
  std::mutex mutex_;
  bool served_ = false;
  std::optional<Clock::TimePoint> not_served_since_;
};

}  // namespace depl::controller
