// Gang scheduling of a phase's workers: a round of a multi-worker phase gets a pod group with
// the round's workers as its minimum, which each worker names, so that the scheduler binds all of
// them or none and no partial set holds GPUs while it waits for the rest. Through Kubernetes' own
// API where the API server serves it (1.37, KEP-4671: a scheduling.k8s.io/v1beta1 PodGroup with
// spec.schedulingPolicy.gang.minCount, named by each pod's spec.schedulingGroup.podGroupName),
// else through the coscheduling plugin of kubernetes-sigs/scheduler-plugins (a
// scheduling.x-k8s.io/v1alpha1 PodGroup with minMember, named by the
// scheduling.x-k8s.io/pod-group label). Asked by the job (spec.gangScheduling) or by the operator
// (--gang-scheduling); where neither API is served (discovery), the workers are created as
// without it.
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

// Which pod group API a gang goes through.
enum class GangApi {
  None,          // neither is served
  Coscheduling,  // scheduling.x-k8s.io/v1alpha1, the coscheduling plugin's
  Native,        // scheduling.k8s.io/v1beta1, Kubernetes' own
};

// The coscheduling plugin's PodGroup.
inline kube::ResourceType pod_group_resource() {
  return {"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true};
}

// Kubernetes' PodGroup.
inline kube::ResourceType native_pod_group_resource() {
  return {"scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", true};
}

// The PodGroup resource of a PodGroup object `build_pod_group` made (by its apiVersion).
kube::ResourceType pod_group_resource_of(const nlohmann::json& pod_group);

// Whether the job's workers are to be gang scheduled: spec.gangScheduling when the job sets it,
// else `operator_default`.
bool gang_scheduling_asked(const nlohmann::json& job, bool operator_default);

// The PodGroup of a round of `job`'s workers in `api` (not None): named `name`
// (queue_admission.hpp's pod_group_name), in the job's namespace, controlled by the job (so it
// goes with it), whose `min_member` pods must all fit before any is bound.
nlohmann::json build_pod_group(const nlohmann::json& job, const std::string& name, int min_member,
                               GangApi api = GangApi::Coscheduling);

// Puts a worker pod in the PodGroup `name` of `api` (not None).
void join_gang(nlohmann::json& pod, const std::string& name, GangApi api = GangApi::Coscheduling);

// Whether a discovery answer for a group-version (an APIResourceList) lists podgroups.
bool lists_pod_groups(const nlohmann::json& resource_list);

// Which PodGroup API the API server serves, asked through discovery when first needed:
// GET /apis/scheduling.k8s.io/v1beta1, then /apis/scheduling.x-k8s.io/v1alpha1; Kubernetes' own
// is preferred when both are. "Served" is remembered per API; "not served" (404, or no podgroups
// listed) for `recheck_after`, so that enabling the API or installing the plugin's CRD later
// takes effect without a restart. Thread-safe.
class PodGroupDiscovery {
 public:
  PodGroupDiscovery(kube::Client& client, Clock& clock,
                    std::chrono::seconds recheck_after = std::chrono::minutes(5));
  // The answer, or an error when the API server could not be asked (the caller tries again).
  Expected<GangApi> served();

 private:
  struct Known {
    bool served = false;
    std::optional<Clock::TimePoint> not_served_since;
  };
  // Whether `path` lists podgroups, from `known` or by asking.
  Expected<bool> ask(Known& known, const std::string& path, Clock::TimePoint now);

  kube::Client& client_;
  Clock& clock_;
  const std::chrono::seconds recheck_after_;
  std::mutex mutex_;
  Known native_;
  Known coscheduling_;
};

}  // namespace depl::controller
