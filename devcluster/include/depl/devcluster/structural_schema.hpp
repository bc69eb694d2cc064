// Structural-schema handling of custom resources (openAPIV3Schema of a CRD version): defaulting,
// pruning of unknown fields and validation with the apiserver's error wording.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/devcluster/api_result.hpp"

namespace depl::devcluster {

// Fills in `default` values (objects: for absent properties; applied top-down so defaults of
// defaulted objects apply too). metadata/apiVersion/kind are left alone.
void apply_schema_defaults(nlohmann::json& object, const nlohmann::json& schema);

// Removes fields the schema does not declare (unless x-kubernetes-preserve-unknown-fields or
// additionalProperties allow them). Returns the paths removed ("spec.foo") for
// fieldValidation=Strict/Warn.
std::vector<std::string> prune_unknown_fields(nlohmann::json& object, const nlohmann::json& schema);

// Validates `object` against `schema`; empty when valid. Field paths are dotted with [i] for
// list items ("spec.datasets[0].name"); messages follow the apiserver ("Invalid value: 1.5:
// spec.target.probability in body should be less than or equal to 0.9999", "Required value",
// "Unsupported value: \"x\": supported values: \"a\", \"b\"").
std::vector<FieldError> validate_against_schema(const nlohmann::json& object,
                                                const nlohmann::json& schema);

}  // namespace depl::devcluster
