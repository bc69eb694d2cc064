// The working state of one decide() call, shared by the parts of the decision: the job's life
// from validation to its end and TTL (job_lifecycle.cpp), planning and re-planning
// (job_planning.cpp), and running the plan's phases round by round (job_phases.cpp). The status is
// decoded once when the state is made and encoded once by finish().
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/controller/job_decision.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/controller/replan.hpp"
#include "depl/solver/solve.hpp"

namespace depl::controller {

class DecisionState {
 public:
  DecisionState(const JobView& view, const DecideOptions& options);

  const JobView& view;
  const DecideOptions& options;
  const nlohmann::json& job;
  const nlohmann::json& spec;  // the job's spec (an empty object when it has none)
  const long generation;
  const std::string now;         // RFC 3339
  const std::string queue_name;  // the queue the workers are admitted through; "" for none
  const JobStatus original;      // the status as read
  JobStatus status;              // the status as decided so far
  Decision decision;

  // What planning knows of the cluster (look_at_cluster in job_planning.cpp).
  solver::Problem problem;               // the spec's problem, without pools
  std::vector<std::string> past_limits;  // the spec's fields past the solver's limits
  solver::Problem full;  // with the cluster's pools (and vanished ones the plan names)
  std::map<std::string, std::string> pool_labels;  // pool name -> node label selecting it
  // Per spot pool, the tolerations of its nodes' spot taints (DiscoveredPools::spot_tolerations).
  std::map<std::string, nlohmann::json> pool_tolerations;
  std::set<std::string> vanished;  // pools of the plan rebuilt from status.poolFigures
  bool pools_known = false;        // `full` holds the cluster's pools
  bool hold_status = false;        // a short wait for its turn: write no status
  double last_solve_seconds = 0;
  // Failed workers of the running phase counted from the view's departed pods in this decision
  // (count_departed_failures): their round restarts as after a failure seen in the caches.
  int departed_failures = 0;
  solver::Plan launch_plan;  // the plan the PhaseLaunch of this decision points at

  void condition(const char* type, bool value, const std::string& reason,
                 const std::string& message);
  void event(const char* type, const std::string& reason, const std::string& message);
  void set_phase(const char* phase, const std::string& message);
  // Deletes `object` (a Pod or a Service of the job) unless it is going already.
  void remove(const char* kind, const nlohmann::json& object);
  // Deletes the job's pods; `only_running`: those that have not ended.
  void delete_pods(bool only_running);

  // spec.replan is OnDeviation (the default).
  bool replans_on_deviation() const;
  int backoff_limit() const;  // spec.backoffLimit
  double seconds_now() const;

  // The decision with the status encoded when it changed, and the progress token asked for when
  // pods run or are made.
  Decision finish();
};

// Facts of the job's pods and Services.
std::string pod_phase(const nlohmann::json& pod);  // status.phase, "Pending" when absent
bool has_ended(const nlohmann::json& pod);         // Succeeded or Failed
bool is_terminating(const nlohmann::json& object);
int label_int(const nlohmann::json& object, const char* key);  // -1 when absent or not a number

// ---- the job's life (job_lifecycle.cpp) ---------------------------------------------------------

// The spec cannot run: conditions, phase, one Event per distinct problem; running pods deleted.
void mark_invalid(DecisionState& state, const std::vector<std::string>& messages);
// Succeeded or Failed: pods that still run are deleted, and the job itself once
// ttlSecondsAfterFinished has passed.
void keep_finished(DecisionState& state);
// spec.suspend: pods deleted, progress kept, a fresh plan on resume.
void suspend(DecisionState& state);
// The job ends: phase, conditions, finishedAt, an Event; running pods deleted.
void end_job(DecisionState& state, bool success, const std::string& reason,
             const std::string& message);

// ---- planning (job_planning.cpp) ---------------------------------------------------------------

// Placement follows creation order: true when the job waits for an earlier job's first plan.
bool waits_for_its_turn(DecisionState& state);
// Finds the cluster's pools and builds state.full; false (and says so) when there is none.
bool look_at_cluster(DecisionState& state);
// Plans, re-plans or keeps the plan in force; false when the job cannot run now (no plan, or it
// ended).
bool plan_if_needed(DecisionState& state);
// The spec is past the solver's limits (limits.hpp), so no solve runs for it. Nothing is deleted:
// a plan in force keeps running (`keeps_plan`), and the job plans once the spec is brought within
// them.
void past_solver_limits(DecisionState& state, bool keeps_plan);
// The plan ran out at `end` without reaching the target: plans more epochs from the observed loss
// when the spec allows and a feasible continuation exists; true when it did.
bool extend_plan(DecisionState& state, const PlanRecord& plan, const Position& end);
// Records the cost and time of what has run so far (never less than recorded before).
void record_spent(DecisionState& state, const solver::Plan& plan, const Position& position);

// ---- running the plan (job_phases.cpp) ---------------------------------------------------------

// Counts every worker of the job ended by a disruption (disruption.hpp) as a preemption, once per
// pod, whatever happens next: before planning, since a reclaim may also take the pool's last
// room (the job then waits, or is re-planned elsewhere, and run_phase never sees the pod in a
// round). The view's departed pods count too: a pod deleted before a status write recorded its
// preemption.
void count_preemptions(DecisionState& state);
// Counts the view's departed workers of the running phase that failed on their own before their
// deletion (departed_pods.hpp keeps them Failed, with no deletionTimestamp) as failures, once per
// pod, against backoffLimit: their pod went before a status write recorded the failure.
void count_departed_failures(DecisionState& state);
// Drives the phase the progress points at: stops leftovers, starts or completes a round,
// restarts after failures, ends the phase and moves on.
void run_phase(DecisionState& state);

// A short text of a plan's phases ("small x3 on t4 (2 workers) -> ...").
std::string short_plan(const PlanRecord& plan);
// The first few of `messages`, joined, for a condition message.
std::string summarise(const std::vector<std::string>& messages);

}  // namespace depl::controller
