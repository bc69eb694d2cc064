// All-or-nothing placement of a pod group, as the coscheduling plugin of kubernetes-sigs/
// scheduler-plugins does with a scheduling.x-k8s.io/v1alpha1 PodGroup: pods labelled
// scheduling.x-k8s.io/pod-group=<name> are bound only when at least the group's spec.minMember
// of them (already bound ones included) fit at once; otherwise none of the waiting ones is bound
// and each says why. And as kube-scheduler does with Kubernetes' own PodGroup
// (scheduling.k8s.io/v1beta1), which a pod names in spec.schedulingGroup.podGroupName: with the
// gang policy, no pod is bound until spec.schedulingPolicy.gang.minCount of them fit at once.
// Pure functions of the pods, the group and the nodes, like choose_among.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scheduling.hpp"

namespace depl::devcluster {

inline constexpr const char* kPodGroupLabel = "scheduling.x-k8s.io/pod-group";

// The pod group a pod names through kPodGroupLabel, "" when none (read in place).
std::string_view pod_group_of(const nlohmann::json& pod);

struct GangDecision {
  // One entry per waiting pod, in the order given: the node it is bound to, or none.
  std::vector<std::optional<std::string>> nodes;
  // Why the waiting pods without a node were not bound, kube-scheduler style ("" when all were).
  std::vector<std::string> messages;
};

// Places `waiting` (the group's pods to schedule, in queue order) given `bound` (how many of the
// group's pods are bound and not terminal) and `pod_group` (the PodGroup object, null when it
// does not exist: then no pod of the group is bound, as the plugin's Permit denies it). Pods
// are tried in order against `used`, each placement counted before the next; if fewer than
// spec.minMember would then be bound, none is. spec.minResources (cpu, memory, nvidia.com/gpu),
// when set, must also be free, summed over the ready nodes, with room for minMember pods; what
// the group's bound pods hold counts as taken (the plugin counts it as free: stricter here).
GangDecision place_gang(const std::vector<const nlohmann::json*>& waiting, int bound,
                        const nlohmann::json* pod_group, const std::vector<NodeFacts>& nodes,
                        NodeUsage used);

// The Kubernetes PodGroup a pod names in spec.schedulingGroup.podGroupName, "" when none (read
// in place).
std::string_view scheduling_group_of(const nlohmann::json& pod);

// As place_gang, for a scheduling.k8s.io/v1beta1 PodGroup (`pod_group`, null when it does not
// exist: then its pods wait, none is bound). The gang policy binds none of `waiting` unless at
// least spec.schedulingPolicy.gang.minCount of the group's pods (`bound` included) fit at once;
// the basic policy places each pod on its own.
GangDecision place_native_gang(const std::vector<const nlohmann::json*>& waiting, int bound,
                               const nlohmann::json* pod_group, const std::vector<NodeFacts>& nodes,
                               NodeUsage used);

}  // namespace depl::devcluster
