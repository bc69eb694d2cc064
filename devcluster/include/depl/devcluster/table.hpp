// meta.k8s.io/v1 Table output for `kubectl get`: columns per kind (pods, nodes, ..., NAME/AGE by
// default, additionalPrinterColumns for custom resources) and one row per object carrying its
// PartialObjectMetadata.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "depl/devcluster/resource_type.hpp"

namespace depl::devcluster {

// `object_or_list` is one object or a list (its "items" become rows; the list's metadata is
// kept). `now` is used for ages. `include_object`: "Object" (the full object in rows[].object,
// includeObject=Object) or "Metadata" (PartialObjectMetadata, the default) or "None".
nlohmann::json to_table(const ResourceType& type, const nlohmann::json& object_or_list,
                        std::chrono::system_clock::time_point now,
                        const std::string& include_object = "Metadata");

// "5s", "3m", "2d4h" the way kubectl prints ages (duration.HumanDuration).
std::string human_duration(std::chrono::seconds age);

// Evaluates the JSONPath subset of printer columns against `object`; nullopt when absent.
std::optional<nlohmann::json> eval_json_path(const nlohmann::json& object, const std::string& path);

}  // namespace depl::devcluster
