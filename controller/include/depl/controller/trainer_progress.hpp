// Kubeflow Trainer v2's progress report (its TrainJob status server), accepted by the progress
// endpoint besides the native one, so a training callback written for Trainer reports here
// unchanged:
//   POST /apis/trainer.kubeflow.org/v1alpha1/namespaces/<ns>/trainjobs/<name>/status?phase=P&rank=R
//   Authorization: Bearer <the job's progress token>
//   {"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 300,
//                      "metrics": [{"name": "eval_loss", "value": "0.52"},
//                                  {"name": "currentEpoch", "value": "2"}, ...],
//                      "lastUpdatedTime": "2026-01-01T00:00:00Z"}}
// The worker's environment names that URL (KUBEFLOW_TRAINER_SERVER_URL, with the phase and rank
// in its query) and the token's file (KUBEFLOW_TRAINER_SERVER_TOKEN). The mapping onto the native
// report (docs/worker-contract.md, section 3b): the epoch is the integral value of the metric
// currentEpoch (else epoch), the loss that of eval_loss (else val_loss, validation_loss, loss).
// A report without both (progress only, or the middle of an epoch) is acknowledged and records
// nothing.
#pragma once

#include <optional>
#include <string>

#include "depl/common/expected.hpp"
#include "depl/controller/progress.hpp"

namespace depl::controller {

inline constexpr const char* kTrainerStatusPathPrefix = "/apis/trainer.kubeflow.org/v1alpha1";
// The environment variables of Kubeflow Trainer's status reporting that worker pods get.
inline constexpr const char* kTrainerServerUrlEnv = "KUBEFLOW_TRAINER_SERVER_URL";
inline constexpr const char* kTrainerServerTokenEnv = "KUBEFLOW_TRAINER_SERVER_TOKEN";

// The Trainer-style URL of a worker's reports: `base` is the endpoint's advertised URL.
std::string trainer_status_url(const std::string& base, const std::string& ns,
                               const std::string& job, std::size_t phase, int rank);

// Parses a Trainer report. `query` is the request target's query ("phase=1&rank=0"), which
// carries the phase and rank. nullopt: a valid report that says no completed epoch with a loss.
// Errors name the field ("trainerStatus.metrics[1].value: ...").
Expected<std::optional<ProgressReport>> parse_trainer_report(const std::string& body,
                                                             const std::string& query);

}  // namespace depl::controller
