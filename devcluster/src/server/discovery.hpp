// Legacy (unaggregated) discovery documents built from the registry: /api (APIVersions),
// /apis (APIGroupList), /apis/<g> (APIGroup) and /api/v1, /apis/<g>/<v> (APIResourceList).
// Served as plain application/json, which is what makes kubectl fall back to legacy discovery.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

// Kubernetes version ordering: GA before beta before alpha, higher numbers first, then the
// rest alphabetically. True when `a` is preferred over `b`.
bool version_preferred(const std::string& a, const std::string& b);

nlohmann::json core_versions_document(const std::string& server_address);
nlohmann::json group_list_document(const std::vector<ResourceType>& types);
// nullopt when no served type has that group.
std::optional<nlohmann::json> group_document(const std::vector<ResourceType>& types,
                                             const std::string& group);
// nullopt when the group/version is not served. Adds "<plural>/status" for types with the
// status subresource, "pods/binding" (create only, kind Binding) and "pods/log".
std::optional<nlohmann::json> resource_list_document(const std::vector<ResourceType>& types,
                                                     const std::string& group,
                                                     const std::string& version);

// A stable short hash of group/version/kind, as storageVersionHash values look.
std::string storage_version_hash(const ResourceType& type);

}  // namespace depl::devcluster
