// The OpenAPI documents kubectl reads: /openapi/v3 (an index of group-versions) and one
// OpenAPI 3.0 document per group-version. Each served kind gets the collection and item paths
// with a PATCH operation carrying x-kubernetes-group-version-kind and the fieldValidation query
// parameter (how kubectl decides to validate on the server), and a component schema tagged with
// its group-version-kind: the CRD's openAPIV3Schema for custom resources (kubectl explain), an
// open object for built-ins. Strategic merge patch is deliberately not offered in the request
// bodies, so kubectl computes those patches from its compiled-in types.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

// {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=..."}, ...}}; the hash
// changes whenever the document changes, so clients never reuse a stale cached copy.
nlohmann::json openapi_v3_index(const std::vector<ResourceType>& types);

// `gv_path` is "api/v1" or "apis/<group>/<version>"; nullopt if not served.
std::optional<nlohmann::json> openapi_v3_document(const std::vector<ResourceType>& types,
                                                  const std::string& gv_path);

}  // namespace depl::devcluster
