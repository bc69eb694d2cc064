// kube-apiserver's validation of the built-in objects an operator builds (its
// pkg/apis/core/validation), for the fields operators get wrong: container resource quantities and
// names, environment variable names, a pod's hostname and subdomain, and Service names. Not the
// whole of it: what is not checked here is stored as sent.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_result.hpp"
#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

// The answer kube-apiserver gives to a write of `object` (of a built-in `type`, defaults applied):
// 400 BadRequest when a quantity cannot be decoded, 422 Invalid naming every offending field
// (details.causes[].field), or nullopt when the checks here pass.
std::optional<ApiResult> validate_builtin_object(const ResourceType& type,
                                                 const nlohmann::json& object);

}  // namespace depl::devcluster
