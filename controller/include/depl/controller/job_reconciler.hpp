// Reconciles one DependableTrainingJob: gathers its view from the informer caches, asks decide()
// what to do, and has the DecisionExecutor carry the decision out through the API client. A job
// whose last creates the caches do not show yet is left alone until they do (CreateExpectations),
// so a lagging pods watch never starts a round twice.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "depl/common/clock.hpp"
#include "depl/controller/create_expectations.hpp"
#include "depl/controller/decision_executor.hpp"
#include "depl/controller/departed_pods.hpp"
#include "depl/controller/gang_scheduling.hpp"
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
  DepartedPods& departed;            // the job's pods deleted from `pods`, not yet counted
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
  // When the caches do not show all of the job's last creates yet: the wait before looking again.
  std::optional<kube::Action> awaiting_creates(const nlohmann::json& job);

  JobCaches caches_;
  Clock& clock_;
  MetricsRegistry& metrics_;
  ReconcilerOptions options_;
  DecisionExecutor executor_;
  PodGroupDiscovery pod_groups_;
  SolveCancellations solves_;
};

}  // namespace depl::controller
