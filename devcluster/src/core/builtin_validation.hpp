// kube-apiserver's validation of the built-in objects an operator builds (its
// pkg/apis/core/validation and friends), for the fields operators get wrong: container resource
// quantities and names, environment variable names, a pod's hostname, subdomain, scheduling gates
// and scheduling group; PodGroups' and Workloads' scheduling policies and templates
// (scheduling.k8s.io/v1beta1); Services' names, ports, protocols and types; Secret and ConfigMap
// keys, sizes and types; Leases' durations; Events' namespaces, types and required fields; and on
// update what may not change: a pod's spec but for images, activeDeadlineSeconds, added
// tolerations, removed scheduling gates and a gated pod's added nodeSelector entries; a Service's
// clusterIP; a Secret's type; immutable Secrets' and ConfigMaps' data; a PodGroup's policy kind
// and a Workload's templates. Not the whole of it: what is not checked here is stored as sent.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_result.hpp"
#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

// The answer kube-apiserver gives to a write of `object` (of a built-in `type`, defaults applied):
// 400 BadRequest when a quantity cannot be decoded, 422 Invalid naming every offending field
// (details.causes[].field), or nullopt when the checks here pass. `creating` adds the checks only
// a create makes (a gated pod naming a node).
std::optional<ApiResult> validate_builtin_object(const ResourceType& type,
                                                 const nlohmann::json& object, bool creating);
// The answer to an update from `old` to `object` (both with defaults applied) that changes what
// kube-apiserver does not let change (422 Invalid), or nullopt. Not for /status writes.
std::optional<ApiResult> validate_builtin_update(const ResourceType& type,
                                                 const nlohmann::json& old,
                                                 const nlohmann::json& object);
// The defaults kube-apiserver gives a pod's spec (restartPolicy, dnsPolicy, schedulerName,
// terminationGracePeriodSeconds; each container's terminationMessagePath, imagePullPolicy and
// port protocols), on create and on update.
void apply_pod_spec_defaults(nlohmann::json& pod);

}  // namespace depl::devcluster
