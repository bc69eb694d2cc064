// The patch formats of PATCH requests: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
// strategic merge patch (built-in types: lists merged by their merge key, $patch, $retainKeys,
// $deleteFromPrimitiveList, $setElementOrder). Pure functions on JSON values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"

namespace depl::devcluster {

// RFC 7386: objects merge recursively, null deletes, anything else replaces.
nlohmann::json apply_merge_patch(const nlohmann::json& target, const nlohmann::json& patch);

// RFC 6902: add, remove, replace, move, copy, test. Errors name the failing operation index and
// path ("the server rejected our request due to an error in our request" is the caller's part).
Expected<nlohmann::json> apply_json_patch(const nlohmann::json& target,
                                          const nlohmann::json& patch);

// How a list field merges under strategic merge patch (built-in types). Looked up by the field's
// name and its parent path's last segment, e.g. "containers" -> merge key "name",
// "ports" under a container -> "containerPort", "ports" under a service spec -> "port".
struct ListStrategy {
  enum Kind { Replace, MergeByKey, MergePrimitives } kind = Replace;
  std::string merge_key;
  bool retain_keys = false;  // patchStrategy "merge,retainKeys" (volumes)
};
// `path` is the dotted path of the list field without indices, e.g. "spec.containers.ports".
ListStrategy strategic_list_strategy(const std::string& path);

// Applies a strategic merge patch to `target` (an object of a built-in kind).
Expected<nlohmann::json> apply_strategic_merge_patch(const nlohmann::json& target,
                                                     const nlohmann::json& patch);

}  // namespace depl::devcluster
