// The scheduler's decision for one pod, as a pure function of the pod, the nodes and what is
// already placed on them: resources (cpu, memory, nvidia.com/gpu, pod count) against
// allocatable, nodeSelector, required node affinity, taints and tolerations, node readiness.
// Among the nodes that fit, the one left with the fewest free GPUs wins (then the name), so
// whole GPU nodes stay free for large jobs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::devcluster {

struct PodResources {
  double cpu = 0;     // cores
  double memory = 0;  // bytes
  double gpu = 0;     // nvidia.com/gpu
  int pods = 0;
};

// What a pod asks for: requests (limits where a request is missing) summed over containers,
// and at least the largest init container's. Unparsable quantities count as 0.
PodResources pod_requests(const nlohmann::json& pod);
// allocatable of a node.
PodResources node_allocatable(const nlohmann::json& node);

bool pod_is_terminal(const nlohmann::json& pod);
// spec.nodeName, read in place ("" when unbound): the simulated controllers ask it of every pod
// at every change.
std::string_view pod_node_name(const nlohmann::json& pod);

struct SchedulingDecision {
  std::optional<std::string> node;  // chosen node, if any fits
  std::string message;              // why none fits, kube-scheduler style
};

// `used` maps node name to the requests of the non-terminal pods already bound to it.
SchedulingDecision choose_node(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes,
                               const std::map<std::string, PodResources>& used);

// Single checks, exposed for tests and for the kubelet.
bool node_is_ready(const nlohmann::json& node);
bool matches_node_selector(const nlohmann::json& pod, const nlohmann::json& node);
bool matches_required_affinity(const nlohmann::json& pod, const nlohmann::json& node);
// The first NoSchedule/NoExecute taint the pod does not tolerate, if any.
std::optional<nlohmann::json> untolerated_taint(const nlohmann::json& pod,
                                                const nlohmann::json& node);

}  // namespace depl::devcluster
