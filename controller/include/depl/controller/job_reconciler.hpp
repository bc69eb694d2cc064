// Reconciles one DependableTrainingJob: gathers its view from the informer caches, asks
// decide() what to do, and carries the decision out through the API client (status first, so a
// counted failure or a new plan is never lost, then deletions and creations, then events). Every
// step is idempotent: deterministic pod names, uid preconditions on deletes, resourceVersion
// preconditions on status writes. A job whose last creates the caches do not show yet is left
// alone until they do (CreateExpectations), so a lagging pods watch never starts a round twice.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "depl/common/clock.hpp"
#include "depl/controller/create_expectations.hpp"
#include "depl/controller/gpu_ledger.hpp"
#include "depl/controller/job_decision.hpp"
#include "depl/controller/metrics.hpp"
#include "depl/controller/placement_line.hpp"
#include "depl/controller/progress_token.hpp"
#include "depl/controller/solve_cancellation.hpp"
#include "depl/kube/client.hpp"
#include "depl/kube/runtime/controller.hpp"
#include "depl/kube/runtime/store.hpp"

namespace depl::controller {

struct JobCaches {
  const kube::Store& jobs;
  const kube::Store& pods;  // every pod; a job's own found by owner uid
  const GpuLedger& gpus;    // GPUs the pods of `pods` hold (fed by the same informer)
  PlacementLine& line;      // the jobs of `jobs` in creation order (fed by its informer; a first
                            // plan written is assumed into it at once)
  const kube::Store& nodes;
  const kube::Store& services;       // services the operator manages
  const kube::Store& config_maps;    // the GPU catalog
  const kube::Store& job_policy;     // the depl-job-policy ConfigMap (job_policy.hpp)
  CreateExpectations& expectations;  // creates not seen yet in `pods` and `services`
};

struct ReconcilerOptions {
  DecideOptions decide;
  std::string catalog_namespace = "depl-system";  // where depl-gpu-catalog lives
  std::string catalog_name = "depl-gpu-catalog";
  std::string field_manager = "depl-controller";
  // Called after a status write that ended a job's wait for its first plan (planned, cannot run
  // now, invalid), once the line knows: the next job in line may plan now.
  std::function<void()> turn_taken;
};

// Records an Event about an object (the runtime's recorder in production).
using EventSink = std::function<void(const nlohmann::json& object, const EventSpec& event)>;

class JobReconciler {
 public:
  JobReconciler(kube::Client& client, JobCaches caches, Clock& clock, EventSink events,
                MetricsRegistry& metrics, ReconcilerOptions options);

  Expected<kube::Action, kube::ReconcileError> reconcile(const kube::ObjectKey& key,
                                                         std::stop_token stop);

  // The job `key` was deleted, or is being deleted: a solve for it in progress stops at the
  // solver's next budget check, and what its reconcile decided is not carried out.
  void cancel_solve(const kube::ObjectKey& key) { solves_.cancel(key); }

  // The view decide() gets for `job` (exposed for tests and `kubectl depl status`). A job that
  // waits for an earlier job's first plan gets no cluster part (nodes, pods, catalog,
  // reservations): decide() stops at the wait without looking at it.
  JobView view_of(const nlohmann::json& job) const;

 private:
  // Creates the Secret `name` with a random progress token for `job`; what its status records.
  Expected<ProgressTokenRecord, kube::ReconcileError> create_token_secret(const nlohmann::json& job,
                                                                          const std::string& name);
  // The options of the reconciler's writes, which never read the object the server returns.
  kube::WriteOptions quiet_write() const;
  // The API server refused `object`, built from `job`'s spec (creation_rejection.hpp): records it
  // in the job's status with a Warning Event, once per spec generation. Failures are only logged:
  // the reconcile fails anyway and is retried.
  void report_rejection(const nlohmann::json& job, const nlohmann::json& object,
                        const kube::ApiError& error);
  // Whether the `type` object `ns`/`name` (whose create was answered AlreadyExists) is there
  // and not controlled by the job with uid `uid`.
  bool held_by_another(const kube::ResourceType& type, const std::string& ns,
                       const std::string& name, const std::string& uid);

  kube::Client& client_;
  JobCaches caches_;
  Clock& clock_;
  EventSink events_;
  MetricsRegistry& metrics_;
  ReconcilerOptions options_;
  SolveCancellations solves_;
};

// Declares the controller's metrics in `registry` (names in docs/operations.md).
void describe_controller_metrics(MetricsRegistry& registry);

}  // namespace depl::controller
