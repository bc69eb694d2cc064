// The DependableTrainingJob's status as typed values, and their JSON form. The status is the
// controller's only memory: everything needed to resume after a restart (the plan in force, where
// the job is, what was reported) is written here, never kept only in the process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "depl/common/expected.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::controller {

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
};

struct LossReport {
  int epoch = 0;  // global epoch number (1-based)
  int phase = 0;
  double loss = 0;
};

struct ProgressRecord {
  int phase = 0;                    // index into the plan's phases of the phase running now
  int epoch = 0;                    // epochs completed in total
  std::optional<double> loss;       // last reported loss
  std::vector<LossReport> history;  // bounded, newest last
  double cost = 0;                  // predicted cost of what has run so far
  double seconds = 0;               // predicted time of what has run so far
  int failures = 0;                 // pod failures in the current phase
  int round = 0;                    // pods of the current phase started this many times
  // Epoch at which the current phase's workers are told to checkpoint and exit.
  int stop_after_epoch = 0;
};

inline constexpr std::size_t kMaxHistory = 200;

nlohmann::json to_json(const PlanRecord& plan);
nlohmann::json to_json(const ProgressRecord& progress);
// Reading back is lenient: status was written by us, but a user may have edited it; anything
// unreadable yields nullopt and the controller re-plans.
std::optional<PlanRecord> plan_from_json(const nlohmann::json& status);
ProgressRecord progress_from_json(const nlohmann::json& status);

// PlanRecord <-> solver::Plan against a Problem; a name the Problem lacks is an error.
Expected<solver::Plan> to_solver_plan(const PlanRecord& record, const solver::Problem& problem);
PlanRecord to_record(const solver::Plan& plan, const solver::Problem& problem,
                     const solver::Figures& figures);

// Sets a metav1.Condition in status.conditions: lastTransitionTime changes only when the status
// flips; observedGeneration is always updated. Returns true when anything changed.
bool set_condition(nlohmann::json& status, const std::string& type, bool value,
                   const std::string& reason, const std::string& message, long generation,
                   const std::string& now_rfc3339);
// The condition's status, or nullopt when absent.
std::optional<bool> condition_status(const nlohmann::json& status, const std::string& type);

}  // namespace depl::controller
