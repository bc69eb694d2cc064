#include "depl/controller/job_decision.hpp"

#include <utility>

#include "decision_state.hpp"
#include "depl/common/json_fields.hpp"
#include "depl/controller/creation_rejection.hpp"
#include "depl/controller/queue_admission.hpp"
#include "depl/controller/worker_spec_validation.hpp"
#include "depl/solver/parse.hpp"

namespace depl::controller {
namespace {

// The spec's problem, or every reason it cannot run: the solver's reading of it, the fields
// only the worker pods use (the API server would refuse the pods otherwise), what the
// administrator allows the job's pods (job_policy.hpp) and the queue it names
// (queue_admission.hpp).
Expected<solver::Problem, std::vector<std::string>> validate(const JobView& view) {
  const nlohmann::json& job = view.job;
  // A job stored past the solver's limits is read all the same: the API server has it (its schema
  // does not enforce them), so it is kept, and only planning waits for a spec within them
  // (solver::past_solver_limits, in decide()).
  auto problem = solver::parse_job_json(job, solver::JobLimits::Stored);
  std::vector<std::string> errors;
  if (!problem) errors = problem.error().messages;
  for (auto& message : validate_worker_fields(job)) errors.push_back(std::move(message));
  if (!view.policy_problem.empty()) {
    errors.push_back(
        "the operator's job policy cannot be read, so no job may run until an "
        "administrator fixes it: " +
        view.policy_problem);
  }
  for (auto& message : check_job_policy(job, view.policy)) errors.push_back(std::move(message));
  if (auto queue = queue_name_problem(job)) errors.push_back(std::move(*queue));
  if (!errors.empty()) return unexpected(std::move(errors));
  return std::move(*problem);
}

}  // namespace

Decision decide(const JobView& view, const DecideOptions& options) {
  DecisionState state(view, options);
  if (json_object(view.job, "metadata").contains("deletionTimestamp")) {
    // Going away: the garbage collector removes the pods.
    return std::move(state.decision);
  }
  auto problem = validate(view);
  if (!problem) {
    mark_invalid(state, problem.error());
    return state.finish();
  }
  if (auto refused = recorded_rejection(state.status, state.generation)) {
    // The API server refused the workers this spec makes: retrying cannot help until the spec
    // changes (creation_rejection.hpp).
    record_rejection(state.status, *refused, state.generation, state.now);
    state.delete_pods(/*only_running=*/true);
    return state.finish();
  }
  state.condition(conditions::kValid, true, "Valid", "the spec is valid");
  state.past_limits = solver::past_solver_limits(*problem);
  state.problem = std::move(*problem);

  if (state.status.phase == phases::kSucceeded || state.status.phase == phases::kFailed) {
    keep_finished(state);
    return state.finish();
  }
  if (state.spec.value("suspend", false)) {
    suspend(state);
    return state.finish();
  }
  if (state.status.started_at.empty()) state.status.started_at = state.now;
  count_preemptions(state);
  count_departed_failures(state);
  if (!waits_for_its_turn(state) && look_at_cluster(state) && plan_if_needed(state)) {
    run_phase(state);
  }
  return state.finish();
}

}  // namespace depl::controller
