// Admission through a queue: Kueue's plain-pod groups
// (https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/). A job that names a queue runs each
// round of a phase as one pod group: every worker carries the queue-name and pod-group-name labels
// and the pod-group-total-count annotation, and Kueue's webhook holds them with its
// kueue.x-k8s.io/admission scheduling gate until it admits the whole group. Pods held by gates
// are queued, not failed or stuck; the time they wait counts against the job's deadline.
// Pure functions over the job, its pods and status.queue (QueueRecord, job_status.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/controller/job_status.hpp"

namespace depl::controller {

inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPodGroupNameLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr const char* kPodGroupTotalCountAnnotation = "kueue.x-k8s.io/pod-group-total-count";
// "false" on a group's pods: once they have all ended, Kueue finishes the group's Workload and
// frees its quota even when they did not all succeed. A round the controller gives up (a failed
// rank, a re-plan) is not retried inside its group: the next round is a group of its own.
inline constexpr const char* kRetriableInGroupAnnotation = "kueue.x-k8s.io/retriable-in-group";

// The queue the job's workers are admitted through: spec.queueName, else the job's
// kueue.x-k8s.io/queue-name label; empty when it names none.
std::string queue_name_of(const nlohmann::json& job);
// Why the queue name cannot be used (it names a LocalQueue and becomes a label value: a DNS-1123
// subdomain of at most 63 characters), naming the field it came from; nullopt when it can.
std::optional<std::string> queue_name_problem(const nlohmann::json& job);

// The pod group of one round of a phase of the plan in force:
// <job>-p<phase>-v<plan revision>-r<round>. Kueue names the group's Workload after it, so it is a
// DNS-1123 subdomain and a label value: names longer than 63 are cut and end in a hash of the
// whole.
std::string pod_group_name(const std::string& job, int revision, std::size_t phase, int round);
// Puts a worker pod in `group` (of `total_count` pods) on `queue`.
void join_pod_group(nlohmann::json& pod, const std::string& queue, const std::string& group,
                    int total_count);

// The scheduling gates that hold `pod` ("a, b"), or "" when none does: a pod that is not bound,
// has not ended and is not being deleted, with a non-empty spec.schedulingGates.
std::string holding_gates(const nlohmann::json& pod);

// The seconds waited in all: the earlier waits and the running one up to `now`.
double queued_seconds(const QueueRecord& queue, std::chrono::system_clock::time_point now);

// When a job with a deadline waits in a queue, the wait threatens the deadline once the time
// waited plus the plan's predicted duration exceed it. The seconds left until then (<= 0: it
// does now); nullopt without a deadline.
std::optional<double> seconds_until_wait_threatens_deadline(std::optional<double> deadline_seconds,
                                                            double plan_seconds,
                                                            double queued_seconds);

}  // namespace depl::controller
