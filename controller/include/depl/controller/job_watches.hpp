// Which changes in the caches concern which DependableTrainingJobs, as the controller's watches:
// a job's own changes and those of its pods and Services; capacity (nodes, the GPU
// catalog) for every job not finished; GPUs freed for the jobs that wait for them; and the next
// job in creation order once one has had its turn at placement.
#pragma once

#include "depl/controller/controller_caches.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

inline constexpr const char* kJobApiVersion = "depl.dev/v1alpha1";
inline constexpr const char* kJobKind = "DependableTrainingJob";

// Adds the watches to `controller`; the caches must outlive it.
void watch_jobs(kube::Controller& controller, ControllerCaches& caches);

// status.phase of a job or pod, "" when absent (json::value() would copy the whole status).
std::string phase_of(const nlohmann::json& object);

}  // namespace depl::controller
