// Carries a Decision (job_decision.hpp) out against the API server for one job, in the order that
// keeps every step safe to repeat: the progress-token Secret before any pod, the status next (so a
// counted failure or a new plan is never lost), its Events, then deletions and creations.
// Deterministic names, uid preconditions on deletes and resourceVersion preconditions on status
// writes make a retried reconcile harmless. A create the API server refuses
// (creation_rejection.hpp) is recorded in the job's status; one that fails otherwise is told in a
// FailedCreate Event and retried with backoff, without starting the round again.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/common/clock.hpp"
#include "depl/controller/create_expectations.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/controller/metrics.hpp"
#include "depl/controller/placement_line.hpp"
#include "depl/controller/progress_token.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/controller.hpp"

namespace depl::controller {

// Records an Event about an object (the runtime's recorder in production).
using EventSink = std::function<void(const nlohmann::json& object, const EventSpec& event)>;

struct ExecutorOptions {
  std::string field_manager = "depl-controller";
  // Called after a status write that ended a job's wait for its first plan (planned, cannot run
  // now, invalid), once the line knows: the next job in line may plan now.
  std::function<void()> turn_taken;
};

class DecisionExecutor {
 public:
  // Everything given must outlive the executor. `line` is told of a first plan before it is
  // written; `expectations` of every create.
  DecisionExecutor(kube::Client& client, PlacementLine& line, CreateExpectations& expectations,
                   Clock& clock, EventSink events, MetricsRegistry& metrics,
                   ExecutorOptions options);

  // Carries `decision` out for `job` (as cached). `round_was_without_pods`: the decision was made
  // knowing the round it runs lacked its pods (JobView::round_without_pods), cleared once they
  // are created. Stops between API calls when `stop` is requested.
  Expected<kube::Action, kube::ReconcileError> execute(const nlohmann::json& job,
                                                       const Decision& decision,
                                                       bool round_was_without_pods,
                                                       std::stop_token stop);

 private:
  using Result = Expected<void, kube::ReconcileError>;
  // ttlSecondsAfterFinished has passed: the job goes (its children with it).
  Result delete_job(const nlohmann::json& job);
  // Whether the cached job is the API server's latest (nullopt: the job is gone).
  Expected<std::optional<bool>, kube::ReconcileError> cache_is_latest(const nlohmann::json& job);
  // Creates the Secret `name` with a random progress token for `job`; what its status records.
  Expected<ProgressTokenRecord, kube::ReconcileError> create_token_secret(const nlohmann::json& job,
                                                                          const std::string& name);
  // The token Secret when asked for, then the status (which records the token); a first plan is
  // assumed into the line before it is written, and forgotten again when the writes fail.
  Result write_status(const nlohmann::json& job, const Decision& decision);
  void post_events(const nlohmann::json& job, const Decision& decision);
  Result remove_objects(const nlohmann::json& job, const Decision& decision, std::stop_token stop);
  Result create_objects(const nlohmann::json& job, const Decision& decision, std::stop_token stop);
  Result create_one(const nlohmann::json& job, const nlohmann::json& object);
  // The options of the writes, which never read the object the server returns.
  kube::WriteOptions quiet_write() const;
  // The API server refused `object`, built from `job`'s spec: recorded in the job's status with
  // a Warning Event, once per spec generation. Failures are only logged: the reconcile fails
  // anyway and is retried.
  void report_rejection(const nlohmann::json& job, const nlohmann::json& object,
                        const kube::ApiError& error);
  // Who holds the `type` object `ns`/`name` whose create was answered AlreadyExists: the job
  // with uid `uid` (an earlier try's create), another owner, or nobody readable now (deleted
  // since, or the read failed).
  enum class Holder { ThisJob, Another, Unknown };
  Holder holder_of(const kube::ResourceType& type, const std::string& ns, const std::string& name,
                   const std::string& uid);
  void event(const nlohmann::json& object, const EventSpec& spec);

  kube::Client& client_;
  PlacementLine& line_;
  CreateExpectations& expectations_;
  Clock& clock_;
  EventSink events_;
  MetricsRegistry& metrics_;
  ExecutorOptions options_;
};

}  // namespace depl::controller
