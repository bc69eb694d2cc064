// Re-planning a running job: where it stands in its plan, the problem of what is left (from the
// observed loss, with the epochs, switches, time and budget still available), and splicing a plan
// for the rest into the one in force. Pure functions over status records and solver values.
#pragma once

#include <optional>

#include "depl/common/expected.hpp"
#include "depl/controller/job_status.hpp"
#include "depl/solver/solve.hpp"

namespace depl::controller {

struct Position {
  std::size_t phase = 0;      // the phase running now (index into the plan record)
  int phase_start_epoch = 0;  // global epochs done when it started
  int done_in_phase = 0;      // epochs of it completed so far
  int epoch = 0;              // global epochs completed
};

Position position_of(const PlanRecord& plan, const ProgressRecord& progress);

// What has run so far, as a solver plan over `plan`'s datasets (phases with 0 epochs dropped).
solver::Plan executed_prefix(const solver::Plan& plan, const Position& position);

// The predicted figures of what has run so far (the executed prefix of `plan`, a plan of
// `problem`), whatever the deadline and budget: they bound the rest, not what ran. Zero cost and
// time when nothing has run.
solver::Figures spent_so_far(const solver::Problem& problem, const solver::Plan& plan,
                             const Position& position);

// The problem of the rest of the job. Fails with a sentence when nothing is left to plan with
// (deadline, budget or epoch horizon used up). When `pods_running`, the running phase's pods are
// still up: a remainder whose first phase keeps its variant, pool and workers continues it
// without a new startup (solver::StartState::workers).
Expected<solver::Problem> remaining_problem(const solver::Problem& full, const solver::Plan& plan,
                                            const Position& position,
                                            std::optional<double> observed_loss,
                                            bool pods_running = true);

// The plan in force with its future replaced by `remainder` (a plan for the remaining problem):
// completed phases stay as run; the running phase is extended when the remainder continues it
// with the same model, pool and workers, and cut at the epochs done otherwise. Predicted figures
// are the executed prefix's cost and time plus the remainder's, and the remainder's (conditional)
// loss and probability.
PlanRecord splice(const PlanRecord& current, const Position& position,
                  const solver::Figures& executed, const PlanRecord& remainder);

// True when `next` makes the job do something different from `current` from the running phase
// on: another model, pool or worker count, or another number of epochs anywhere ahead.
bool changes_course(const PlanRecord& current, const PlanRecord& next, const Position& position);

}  // namespace depl::controller
