// The CustomResourceDefinition of the coscheduling plugin's PodGroup
// (podgroups.scheduling.x-k8s.io, version v1alpha1, status subresource), with the schema
// kubernetes-sigs/scheduler-plugins publishes for it: what a cluster with that plugin installed
// serves (DevClusterOptions::coscheduling).
#pragma once

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_store.hpp"

namespace depl::devcluster {

nlohmann::json pod_group_crd();

// Creates the CRD in `store`, as installing the plugin's manifests would.
Expected<void> install_pod_group_crd(ApiStore& store);

}  // namespace depl::devcluster
