// The backstop for spec errors the controller's own validation (worker_spec_validation.hpp) does
// not know: when the API server refuses a worker Pod or rendezvous Service built from the job's
// spec (422 Invalid, 400 BadRequest), retrying the same spec cannot help. The job records the
// refusal in its status (Valid=False, reason RejectedByAPIServer, naming the field) with a Warning
// Event, and decide() creates nothing more for that spec generation; a changed spec is tried
// afresh. Pure functions: the reconciler does the API calls.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/controller/job_status.hpp"
#include "depl/kube/api_error.hpp"

namespace depl::controller {

inline constexpr const char* kRejectedByApiServer = "RejectedByAPIServer";
// Events carry at most this much of a message (the API server's can be long).
inline constexpr std::size_t kMaxRejectionMessage = 1024;

// Whether `error`, answering the create of an object built from a job's spec, refuses the object
// itself (as opposed to a conflict, a missing namespace, a transient failure).
bool is_rejection(const kube::ApiError& error);

// What the user reads in the condition and the Event: which object was refused, the API server's
// field and message for each cause (details.causes; its message when there are none), and for a
// worker Pod's field the job's field it came from ("from spec.models[1].resources"). At most
// kMaxRejectionMessage bytes.
std::string rejection_message(const nlohmann::json& job, const nlohmann::json& object,
                              const kube::ApiError& error);

// The message of the FailedCreate Warning Event for a create the API server answered with an
// error that is not a rejection (a quota, RBAC, a webhook, a server error): "Error creating Pod
// <name>: <code> <reason>: <message>", at most kMaxRejectionMessage bytes.
std::string failed_create_message(const nlohmann::json& object, const kube::ApiError& error);

// `latest` (the job as the API server has it now) with the refusal of an object built from
// `built_from` recorded in its status: Valid=False and Running=False with reason
// RejectedByAPIServer, phase Pending, the message. nullopt when there is nothing to write: the spec
// changed since (the next reconcile builds anew), or the same refusal is recorded already (so a
// retry writes nothing and posts no second Event).
std::optional<nlohmann::json> job_recording_rejection(const nlohmann::json& built_from,
                                                      const nlohmann::json& latest,
                                                      const std::string& message,
                                                      const std::string& now_rfc3339);

// The message of a refusal recorded in `status` for spec generation `generation`, if any.
std::optional<std::string> recorded_rejection(const JobStatus& status, long generation);

// Records a refusal in `status` as job_recording_rejection does; returns whether it changed.
bool record_rejection(JobStatus& status, const std::string& message, long generation,
                      const std::string& now_rfc3339);

}  // namespace depl::controller
