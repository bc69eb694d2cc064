// Checks the operator-only spec fields that worker_pods.cpp copies into worker Pods (a model's
// image, resources and env; spec.podTemplate; dataset and checkpoint volumes) by the rules the API
// server applies to the Pod, so a mistake reaches the user as InvalidSpec naming the job's field
// rather than as a refused Pod create. The solver checks the model's own fields (solver/parse.hpp).
// Rules that depend on how the API server classifies a resource (extended resources must be whole
// numbers with requests equal to limits, hugepages) are left to it: a Pod it refuses is reported
// by creation_rejection.hpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace depl::controller {

// Every problem found in `job` (a DependableTrainingJob object), each "path: what is wrong"
// ("spec.models[0].resources.limits.memory: must be a quantity such as 10Gi or 1.5G, got
// \"lots\""); empty when the fields are fine. Fields of the wrong shape elsewhere in the spec are
// the solver's to report and are skipped. Never throws.
std::vector<std::string> validate_worker_fields(const nlohmann::json& job);

}  // namespace depl::controller
