// The reconcile logic of a DependableTrainingJob as one pure function: from the job and what
// the caches show (its pods, the cluster's nodes and pods, other jobs' reservations) to what
// should happen next (the status to write, objects to create or delete, events, when to look
// again). Level-triggered and idempotent: running it twice on the same view decides the same.
// The executor (job_reconciler.hpp) carries the decision out against the API server; the status
// it reads and writes is typed in job_status.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/controller/gang_scheduling.hpp"
#include "depl/controller/job_policy.hpp"
#include "depl/controller/pool_discovery.hpp"
#include "depl/controller/stoppable_solve.hpp"
#include "depl/controller/worker_pods.hpp"
#include "depl/solver/solve.hpp"

namespace depl::controller {

// Everything decide() looks at. Vectors hold objects as served by the API.
struct JobView {
  nlohmann::json job;
  std::vector<nlohmann::json> owned_pods;      // pods whose controller is this job
  std::vector<nlohmann::json> owned_services;  // services whose controller is this job
  // Pods of this job deleted since the caches showed them whose uid the status does not record
  // yet (departed_pods.hpp): their final objects, oldest first. A disruption among them is a
  // preemption all the same; nothing else is read of them.
  std::vector<nlohmann::json> departed_pods;
  // The name for the job's progress-token Secret if it gets workers and its status records no
  // token yet (progress_token.hpp): the executor's random choice, so that decide() stays a
  // function of the view.
  std::string new_token_secret;
  // The administrator's job policy (job_policy.hpp), and why it could not be read when it could
  // not (then no job runs until it is fixed).
  JobPolicy policy;
  std::string policy_problem;
  SharedObjects nodes;
  GpusByNode gpus_in_use;  // GPUs held on each node by pods other than this job's
  GpuCatalog catalog;
  std::vector<Reservation> reservations;  // GPUs promised to jobs created before this one
  // "ns/name" of a job created before this one that has not been planned yet (empty: none).
  // Placement follows creation order: this job's first plan waits for it, or both would count
  // the same free GPUs. While it is set and the job has no plan, decide() looks at nothing of
  // the cluster (nodes, gpus_in_use, catalog, reservations), which may then be left empty.
  std::string unplanned_earlier_job;
  // The round of a phase (status.progress phase and round) that a reconcile started and whose
  // pods the API server then refused to create (a quota, a webhook): creating them again does
  // not start another round (no PhaseStarted, the round not counted twice).
  struct Round {
    int phase = -1;
    int round = -1;
  };
  std::optional<Round> round_without_pods;
  // Which PodGroup API the API server serves (gang_scheduling.hpp): looked up only for a job that
  // asks for gang scheduling.
  GangApi gang_api = GangApi::None;
  std::chrono::system_clock::time_point now;
  // Requested when the controller stops or the job is deleted (solve_cancellation.hpp): a solve
  // in progress is abandoned (stoppable_solve.hpp) and the decision is not carried out.
  std::stop_token stop;
};

struct DecideOptions {
  PoolDefaults pool_defaults;
  std::string progress_url;     // base URL workers report to
  std::string checkpoint_root;  // overrides spec.checkpoint.path when set
  RendezvousMode rendezvous = RendezvousMode::Dns;
  // Gang scheduling for jobs that do not say (spec.gangScheduling): the operator's
  // --gang-scheduling.
  bool gang_scheduling = false;
  solver::SolveOptions solve;
  // A re-plan on deviation changes course only when the plan in force no longer keeps the
  // promise from the observed loss, or the new plan is cheaper by at least this fraction. Noise
  // alone must not move a job between pools every epoch.
  double replan_min_savings = 0.05;
  // The weight of a spot pool's stated interruption rate against the preemptions a job observes
  // there, in interruptions (interruption_rate.hpp): the rate a job plans with is the posterior
  // mean of a Gamma prior with the stated mean and this shape. 0 plans with the stated rate only.
  double interruption_prior_events = 2.0;
  // The longest a job waits for the spot pool of its running phase to get nodes back after a
  // reclaim took them all, before it is planned without the pool (a deadline's slack may end
  // the wait sooner: job_planning.cpp). 0 re-plans at once.
  std::chrono::seconds spot_capacity_wait{600};
  // A job that waits for its turn at placement says so in its status only once it has existed
  // this long: one of a thousand jobs applied at once usually gets its turn sooner, and a
  // status write for each would hold back the placements the burst is waiting for.
  std::chrono::seconds waiting_status_after{30};
  // Measures the solver (seconds); defaults to a steady clock when empty. Injected for tests.
  std::function<double()> seconds_now;
  // The solver; solver::solve when empty. Injected for tests (a solve that blocks until stopped).
  SolveFunction solve_function;
};

struct EventSpec {
  std::string type;    // Normal | Warning
  std::string reason;  // CamelCase, documented in docs/troubleshooting.md
  std::string message;
};

struct ObjectToDelete {
  std::string kind;  // "Pod" | "Service"
  std::string name;
  std::string uid;  // precondition: delete only this incarnation
};

struct Decision {
  std::optional<nlohmann::json> status;  // the whole new status when it changed
  // Create the progress-token Secret named view.new_token_secret with a random token, and
  // record it in the status (status.progressToken), before any pod: the job gets workers and its
  // status records no token yet. The pods created reference that Secret.
  bool ensure_token_secret = false;
  std::string token_secret;            // that Secret's name (view.new_token_secret)
  std::vector<nlohmann::json> create;  // PodGroups, Pods and Services, in order
  std::vector<ObjectToDelete> remove;
  std::vector<EventSpec> events;
  std::optional<std::chrono::seconds> requeue_after;
  bool delete_job = false;    // ttlSecondsAfterFinished has passed
  double solve_seconds = -1;  // time spent in the solver, when it ran
  bool replanned = false;     // the plan in force changed
  // The pods to remove or create restart or complete a phase from the job's progress as cached,
  // and no status write fences them (a write from a stale cache fails with a conflict; deletes
  // and creates do not): carry them out only if the cached job is the API server's latest. After
  // an API outage the pods watch can be back before the jobs watch, and a phase whose workers had
  // finished would be restarted from epochs they had already reported.
  bool needs_latest_job = false;
  // The phase and round of the status in force once `status` is written: the round a failed
  // create leaves without its pods (JobView::round_without_pods).
  JobView::Round round;
};

Decision decide(const JobView& view, const DecideOptions& options);

}  // namespace depl::controller
