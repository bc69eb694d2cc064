// The DependableTrainingJob's status as typed values, and their JSON form. The status is the
// controller's only memory: everything needed to resume after a restart (the plan in force, where
// the job is, what was reported) is written here, never kept only in the process.
//
// A reconcile and a progress report each decode the status once (decode_status), work on the
// JobStatus, and encode it once (encode_status). Adding a field takes three lines: the member,
// its line in decode_status and its line in encode_status (job_status.cpp). Decoding is lenient:
// the status was written by us, but a user may have edited it; a field that cannot be read is
// absent, and a plan that cannot be read makes the controller plan again. Keys this version does
// not know are kept as they were (JobStatus::unknown), so a replica of another version loses
// nothing it wrote.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/controller/progress_token.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::controller {

// Condition types (status.conditions[].type) and phases (status.phase), spelled once.
namespace conditions {
inline constexpr const char* kValid = "Valid";
inline constexpr const char* kPlanned = "Planned";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
// The job's workers wait for admission through a queue (queue_admission.hpp).
inline constexpr const char* kQueued = "Queued";
}  // namespace conditions
namespace phases {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kSuspended = "Suspended";
// The running round's workers wait for admission through a queue (queue_admission.hpp).
inline constexpr const char* kQueued = "Queued";
}  // namespace phases

// One phase as the status records it: by names, so it survives spec edits that reorder lists.
struct PhaseRecord {
  std::string model;
  int epochs = 0;
  std::string pool;
  int workers = 0;
  friend bool operator==(const PhaseRecord&, const PhaseRecord&) = default;
};

struct PlanRecord {
  std::vector<std::string> datasets;
  std::vector<PhaseRecord> phases;
  // Predicted figures of the whole plan (executed part included), from the evaluator.
  double cost = 0;
  double duration_seconds = 0;
  double loss_mean = 0;
  double loss_stddev = 0;
  double probability = 0;
  std::string algorithm;
  double solve_seconds = 0;
  int revision = 0;  // bumped on every change of plan
  // The solver's certificate: no plan that meets the job's constraints costs less (after a
  // re-plan: the cost of what has run plus the bound on what remains). Absent when the plan's
  // algorithm does not certify (EXP, FULL) or the plan was not solved for.
  std::optional<double> lower_bound;
  // The solve's time or memory budget ran out: the plan is the best it had found by then.
  bool budget_limited = false;
  friend bool operator==(const PlanRecord&, const PlanRecord&) = default;
};

struct LossReport {
  int epoch = 0;  // global epoch number (1-based)
  int phase = 0;
  double loss = 0;
  friend bool operator==(const LossReport&, const LossReport&) = default;
};

// Rounds in a row, at one recorded epoch, whose workers exited because they could not deliver a
// progress report (kExitProgressUnreachable in job_phases.cpp).
struct UnreachableRecord {
  int rounds = 0;
  int epoch = -1;  // the progress epoch they were counted at
  int round = -1;  // the last round counted
  friend bool operator==(const UnreachableRecord&, const UnreachableRecord&) = default;
};

struct ProgressRecord {
  int phase = 0;                    // index into the plan's phases of the phase running now
  int epoch = 0;                    // epochs completed in total
  std::optional<double> loss;       // last reported loss
  std::vector<LossReport> history;  // bounded (kMaxHistory), newest last
  double cost = 0;                  // predicted cost of what has run so far
  double seconds = 0;               // predicted time of what has run so far
  int failures = 0;                 // pod failures in the current phase
  int preemptions = 0;              // workers ended by a disruption, in all (never failures)
  double lost_seconds = 0;          // the time those preemptions cost, in all (PreemptionRecord)
  int round = 0;                    // pods of the current phase started this many times
  // Epoch at which the current phase's workers are told to checkpoint and exit.
  int stop_after_epoch = 0;
  std::string model;  // the running phase's variant and pool, for people reading the status
  std::string pool;
  std::optional<UnreachableRecord> unreachable;
  // RFC 3339: since when the running round has trained without a checkpoint the job can resume
  // from (its last recorded epoch, or its start or admission); "" when no round trains or a
  // preemption has already counted what it lost.
  std::string checkpointed_at;
  friend bool operator==(const ProgressRecord&, const ProgressRecord&) = default;
};

// status.queue: how long the job's workers have waited for admission (queue_admission.hpp).
struct QueueRecord {
  std::string since;          // RFC 3339: the running round waits since then ("": it does not)
  double waited_seconds = 0;  // the earlier waits, in total
  bool replanned = false;     // the running wait has already had the plan made again
  friend bool operator==(const QueueRecord&, const QueueRecord&) = default;
};

// status.capacityWait: the job's waits for a spot pool of its running phase to get nodes back
// after a reclaim took them all (job_planning.cpp, "waiting for spot capacity").
struct CapacityWaitRecord {
  std::string pool;           // the pool the running wait is for ("" when none runs)
  std::string since;          // RFC 3339: the running wait started then ("": none runs)
  double waited_seconds = 0;  // the earlier waits, in total
  // The running wait is over: the job was planned without the pool; it is not waited for again
  // until it has had nodes.
  bool replanned = false;
  friend bool operator==(const CapacityWaitRecord&, const CapacityWaitRecord&) = default;
};

inline constexpr std::size_t kMaxHistory = 200;
// Failed pods whose failure was counted (by uid), so one seen again is not counted twice.
inline constexpr std::size_t kMaxCountedFailures = 50;

// A metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // True | False | Unknown
  std::string reason;
  std::string message;
  std::optional<long> observed_generation;
  std::string last_transition_time;  // RFC 3339
  friend bool operator==(const Condition&, const Condition&) = default;
};

// A pool's figures as the status remembers them for the pools the plan names (everything but its
// free GPUs), so a plan can still be evaluated after the pool's nodes are gone.
struct PoolFigures {
  std::string gpu_type;
  double gpu_gflops = 0;
  double price_per_gpu_hour = 0;
  double bandwidth = 0;
  double storage_bandwidth = 0;
  double startup_seconds = 0;
  std::map<std::string, double> inter_pool;
  solver::CapacityType capacity_type = solver::CapacityType::OnDemand;
  double interruptions_per_hour = 0;  // per worker-hour
  friend bool operator==(const PoolFigures&, const PoolFigures&) = default;
};

// The workers of one pool ended by a disruption (disruption.hpp): how many, the last one's time
// and cause, and the time they cost (docs/depl-model.md section 7: the work since the last
// checkpoint plus the restart, once per round). Kept as well for a pool with interruptions the
// job trained on without a preemption: `worker_seconds` is the exposure its observed interruption
// rate is measured over (interruption_rate.hpp).
struct PreemptionRecord {
  int count = 0;
  std::string last_time;  // RFC 3339
  std::string last_cause;
  double lost_seconds = 0;
  double worker_seconds = 0;  // the job's workers' training time in the pool, summed over workers
  friend bool operator==(const PreemptionRecord&, const PreemptionRecord&) = default;
};

PoolFigures figures_of(const solver::Pool& pool);
// The pool `name` rebuilt from remembered figures, with no GPUs: the phases that ran there stay
// evaluable and nothing new is placed there. nullopt when the figures cannot describe a pool.
std::optional<solver::Pool> pool_from_figures(const std::string& name, const PoolFigures& figures);

struct JobStatus {
  std::string phase;    // phases::*, empty before the first status write
  std::string message;  // one line for people: what the job does or waits for
  std::optional<long> observed_generation;
  std::string started_at;   // RFC 3339, empty until the job first planned or waited
  std::string finished_at;  // RFC 3339, empty until Succeeded or Failed
  std::vector<Condition> conditions;
  std::optional<PlanRecord> plan;        // the plan in force
  std::optional<int> planned_at_epoch;   // the epoch the plan in force was made (or confirmed) at
  bool replan_requested = false;         // plan afresh at the next reconcile
  ProgressRecord progress;               // written with the first plan
  // uids of the failed and preempted pods counted, oldest first, at most kMaxCountedFailures
  std::vector<std::string> failed_pods;
  std::map<std::string, PoolFigures> pool_figures;  // of the pools the plan in force names
  std::map<std::string, PreemptionRecord> preemptions;  // per pool
  // The job's progress-token Secret and the token's hash (progress_token.hpp), from its first
  // workers on.
  std::optional<ProgressTokenRecord> progress_token;
  std::optional<QueueRecord> queue;                   // from the first wait for admission on
  std::optional<CapacityWaitRecord> capacity_wait;    // from the first wait for spot capacity on
  nlohmann::json unknown = nlohmann::json::object();  // keys this version does not know
  friend bool operator==(const JobStatus&, const JobStatus&) = default;

  // The condition of `type`, or nullptr.
  const Condition* condition(const std::string& type) const;
  // Whether the condition of `type` is True; nullopt when absent.
  std::optional<bool> condition_is(const std::string& type) const;
};

// `status` is the job's .status (any JSON: a non-object decodes as an empty status).
JobStatus decode_status(const nlohmann::json& status);
nlohmann::json encode_status(const JobStatus& status);

// The job's figures as people read them, wherever they are shown: status.display (the printer
// columns of `kubectl get` and `kubectl describe`), `kubectl depl status` and `kubectl-depl demo`.
// Loss and P(target) to 4 significant digits, cost to 3 (format_significant). Machine outputs
// (the status itself, -o json/yaml) keep the full precision.
std::string display_loss(double loss);
std::string display_probability(double probability);
std::string display_cost(double cost);

// Sets a condition: lastTransitionTime changes only when its status flips; observedGeneration is
// always updated. Returns true when anything changed.
bool set_condition(JobStatus& status, const std::string& type, bool value,
                   const std::string& reason, const std::string& message, long generation,
                   const std::string& now_rfc3339);

// The JSON of parts of the status, as encode_status writes them.
nlohmann::json to_json(const PlanRecord& plan);
nlohmann::json to_json(const ProgressRecord& progress);
nlohmann::json to_json(const QueueRecord& queue);
nlohmann::json to_json(const CapacityWaitRecord& wait);
// Parts of a status JSON, read as decode_status reads them.
std::optional<PlanRecord> plan_from_json(const nlohmann::json& status);
ProgressRecord progress_from_json(const nlohmann::json& status);
// status.queue; a record with nothing in it when absent.
QueueRecord queue_from_json(const nlohmann::json& status);
// status.capacityWait; a record with nothing in it when absent.
CapacityWaitRecord capacity_wait_from_json(const nlohmann::json& status);
std::optional<bool> condition_status(const nlohmann::json& status, const std::string& type);

// PlanRecord <-> solver::Plan against a Problem; a name the Problem lacks is an error.
Expected<solver::Plan> to_solver_plan(const PlanRecord& record, const solver::Problem& problem);
PlanRecord to_record(const solver::Plan& plan, const solver::Problem& problem,
                     const solver::Figures& figures);

}  // namespace depl::controller
