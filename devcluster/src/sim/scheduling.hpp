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

// Node name -> the requests of the non-terminal pods already bound to it.
using NodeUsage = std::map<std::string, PodResources, std::less<>>;

// What choose_among reads of a node, worked out once per version of it: the simulated scheduler
// asks it of every node for every pod it places, and parsing the node's quantities and
// conditions again each time was most of the scheduler's work in a burst of pods. `node` is not
// owned: it must outlive the facts.
struct NodeFacts {
  const nlohmann::json* node = nullptr;
  std::string name;
  bool ready = false;
  bool unschedulable = false;
  PodResources allocatable;
};
NodeFacts node_facts(const nlohmann::json& node);

SchedulingDecision choose_among(const nlohmann::json& pod, const std::vector<NodeFacts>& nodes,
                                const NodeUsage& used);
// choose_among, working out each node's facts first (tests, one-off decisions).
SchedulingDecision choose_node(const nlohmann::json& pod, const std::vector<nlohmann::json>& nodes,
                               const NodeUsage& used);

// Single checks, exposed for tests and for the kubelet.
bool node_is_ready(const nlohmann::json& node);
bool matches_node_selector(const nlohmann::json& pod, const nlohmann::json& node);
bool matches_required_affinity(const nlohmann::json& pod, const nlohmann::json& node);
// The first NoSchedule/NoExecute taint the pod does not tolerate, if any.
std::optional<nlohmann::json> untolerated_taint(const nlohmann::json& pod,
                                                const nlohmann::json& node);

}  // namespace depl::devcluster
