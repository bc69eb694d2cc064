// The built-in resource types the dev cluster serves from the start (core/v1, events.k8s.io,
// coordination, apps, rbac, apiextensions; with `workload_scheduling`, scheduling.k8s.io/v1beta1
// workloads and podgroups, as a cluster with the GenericWorkload feature gate on) and the custom
// resource types a CRD defines.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/devcluster/api_result.hpp"
#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

std::vector<ResourceType> builtin_resource_types(bool workload_scheduling = false);

// The served versions of an apiextensions.k8s.io/v1 CustomResourceDefinition as resource types,
// or the validation errors of the CRD (field paths like "spec.names.plural").
Expected<std::vector<ResourceType>, std::vector<FieldError>> resource_types_from_crd(
    const nlohmann::json& crd);

// Field selector fields a type supports besides metadata.name and metadata.namespace.
bool field_selector_supported(const ResourceType& type, const std::string& field);

}  // namespace depl::devcluster
