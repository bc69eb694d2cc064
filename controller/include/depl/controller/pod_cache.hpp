// What the controller keeps of a pod in its informer cache. It watches every pod of the cluster
// (GPUs in use are GPUs in use, whoever runs them); kept whole, pods would be most of its
// memory: a worker pod is ~3 KB of JSON and ~21 KB as a parsed document.
#pragma once

#include <nlohmann/json.hpp>

#include "depl/kube/field_filter.hpp"

namespace depl::controller {

// An informer transform. Every pod keeps what the cache and GPU accounting read (the store's
// key, pod_holds_gpus, pod_gpu_request, GpuLedger): metadata name, namespace,
// resourceVersion, deletionTimestamp; spec.nodeName and the name and nvidia.com/gpu requests
// and limits of each container that has them; status.phase.
// Pods a DependableTrainingJob controls also keep what the controller reads of its own:
// apiVersion, kind, uid, creationTimestamp, ownerReferences, labels, annotations,
// spec.schedulingGates, every container (name, GPUs, the DEPL_MODEL variable), the terminated
// state (exit code, reason) of each container status, status.reason and the disruption conditions
// (kDisruptionConditions: type, status, reason, lastTransitionTime) that tell a preemption.
// A new read of pods in decide() must be added here, and to cached_pod_fields; the tests
// compare decisions on whole and trimmed pods.
void trim_cached_pod(nlohmann::json& pod);

// What the pods informer decodes of each listed or watched pod (WatcherOptions::prefilter): every
// member trim_cached_pod reads, whoever owns the pod, so that trimming a pod decoded with it gives
// what trimming the whole pod gives (the tests check this on many pods).
kube::FieldFilter cached_pod_fields();

}  // namespace depl::controller
