// Whether a worker pod ended, or is ending, by a disruption rather than by a fault of its own:
// its node was reclaimed, drained or lost, or the pod was evicted or preempted. A disrupted
// worker's round restarts from the checkpoint without counting against the job's backoffLimit
// (docs/user-guide.md, "Spot capacity and preemptions").
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/controller/pool_discovery.hpp"

namespace depl::controller {

// The pod conditions that mark a pod stopped for the cluster's sake, read in this order:
// Kubernetes' own, and the one Kueue's pod integration sets on each pod of a group it stops
// (evicted by preemption, a PodsReady timeout, an admission check or node failures; its workload
// deleted or no longer admitted) before deleting it. The pod cache keeps them (pod_cache.hpp).
inline constexpr std::array<const char*, 2> kDisruptionConditions = {"DisruptionTarget",
                                                                     "TerminationTarget"};

// What ended a disrupted pod, for events and status ("DisruptionTarget: EvictionByEvictionAPI",
// "node spot-0: karpenter.sh/disrupted taint", "node spot-0: gone"); empty when the pod was not
// disrupted. Read, in this order:
// - the condition DisruptionTarget=True (eviction, preemption by the scheduler, the taint
//   manager, the pod garbage collector, the kubelet's node-pressure or shutdown termination),
//   then TerminationTarget=True (Kueue stopping the pods of a group it evicted: preempted by a
//   higher priority, a PodsReady timeout, node failures; "TerminationTarget: WorkloadEvicted");
// - status.reason Evicted, Preempting, Shutdown, NodeShutdown, Terminated or NodeLost (kubelets
//   that set no condition);
// - for a pod that has ended or is terminating: its node (spec.nodeName) gone from `nodes`, not
//   Ready, or carrying a reclaim taint (pool_discovery.hpp, kReclaimTaints); nothing when
//   `nodes` is empty (not known).
// A running pod on a node with a reclaim taint is not disrupted yet: it may still finish.
std::string pod_disruption(const nlohmann::json& pod, const SharedObjects& nodes);

// When the pod was disrupted: the lastTransitionTime of its DisruptionTarget=True (or
// TerminationTarget=True) condition; nullopt without one (the caller takes the time it saw the
// pod disrupted).
std::optional<std::chrono::system_clock::time_point> pod_disrupted_at(const nlohmann::json& pod);

}  // namespace depl::controller
