#include "depl/controller/replan.hpp"

#include <fmt/format.h>

#include "depl/solver/evaluator.hpp"

namespace depl::controller {

Position position_of(const PlanRecord& plan, const ProgressRecord& progress) {
  Position pos;
  pos.epoch = progress.epoch;
  pos.phase = std::min<std::size_t>(static_cast<std::size_t>(progress.phase),
                                    plan.phases.empty() ? 0 : plan.phases.size() - 1);
  for (std::size_t i = 0; i < pos.phase; ++i) pos.phase_start_epoch += plan.phases[i].epochs;
  pos.done_in_phase = std::max(0, progress.epoch - pos.phase_start_epoch);
  return pos;
}

solver::Plan executed_prefix(const solver::Plan& plan, const Position& position) {
  solver::Plan prefix;
  prefix.datasets = plan.datasets;
  for (std::size_t i = 0; i < position.phase && i < plan.phases.size(); ++i) {
    if (plan.phases[i].epochs > 0) prefix.phases.push_back(plan.phases[i]);
  }
  if (position.phase < plan.phases.size() && position.done_in_phase > 0) {
    solver::Phase running = plan.phases[position.phase];
    running.epochs = position.done_in_phase;
    prefix.phases.push_back(running);
  }
  return prefix;
}

solver::Figures spent_so_far(const solver::Problem& problem, const solver::Plan& plan,
                             const Position& position) {
  const solver::Plan prefix = executed_prefix(plan, position);
  if (prefix.phases.empty()) return {};
  solver::Problem scratch = problem;
  scratch.target.deadline_seconds.reset();
  scratch.target.budget.reset();
  return solver::evaluate(scratch, prefix);
}

Expected<solver::Problem> remaining_problem(const solver::Problem& full, const solver::Plan& plan,
                                            const Position& position,
                                            std::optional<double> observed_loss,
                                            bool pods_running) {
  solver::Problem rest = full;
  // Keep the data the job trains on.
  rest.datasets.clear();
  for (std::size_t d : plan.datasets) rest.datasets.push_back(full.datasets.at(d));
  rest.fixed_datasets = true;
  const solver::Plan prefix = executed_prefix(plan, position);
  if (prefix.phases.empty()) return rest;  // nothing has run: plan afresh on the chosen data

  // The plan over the rest's datasets (the plan's, in order).
  solver::Plan plan_on_rest = plan;
  plan_on_rest.datasets.clear();
  for (std::size_t i = 0; i < rest.datasets.size(); ++i) plan_on_rest.datasets.push_back(i);
  const solver::Figures spent = spent_so_far(rest, plan_on_rest, position);

  int switches = 0;
  for (std::size_t i = 1; i < prefix.phases.size(); ++i) {
    if (prefix.phases[i].model != prefix.phases[i - 1].model) ++switches;
  }
  const solver::Phase& last = prefix.phases.back();
  // An observed loss is where the trajectory stands (up to the report's own transient noise);
  // without one the plan's prediction carries on.
  const solver::LossState from =
      observed_loss ? solver::observed_loss_state(full.models.at(last.model).loss, *observed_loss)
                    : solver::LossState{spent.loss_mean, spent.loss_state_variance};
  rest.start = solver::StartState{full.models.at(last.model).name, full.pools.at(last.pool).name,
                                  from.mean, from.variance,
                                  pods_running && position.done_in_phase > 0 ? last.workers : 0};
  rest.training.max_epochs -= position.epoch;
  rest.training.max_switches = std::max(0, rest.training.max_switches - switches);
  if (rest.training.max_epochs < 1) {
    return error(
        fmt::format("the epoch horizon (maxEpochs {}) is used up", full.training.max_epochs));
  }
  if (full.target.deadline_seconds) {
    const double left = *full.target.deadline_seconds - spent.duration_seconds;
    if (left <= 0) return error("the deadline is used up");
    rest.target.deadline_seconds = left;
  }
  if (full.target.budget) {
    const double left = *full.target.budget - spent.cost;
    if (left <= 0) return error("the budget is used up");
    rest.target.budget = left;
  }
  return rest;
}

PlanRecord splice(const PlanRecord& current, const Position& position,
                  const solver::Figures& executed, const PlanRecord& remainder) {
  PlanRecord out = current;
  out.phases.assign(
      current.phases.begin(),
      current.phases.begin() + static_cast<long>(std::min(position.phase, current.phases.size())));
  std::size_t next = 0;
  if (position.phase < current.phases.size() && position.done_in_phase > 0) {
    PhaseRecord running = current.phases[position.phase];
    running.epochs = position.done_in_phase;
    if (!remainder.phases.empty() && remainder.phases[0].model == running.model &&
        remainder.phases[0].pool == running.pool &&
        remainder.phases[0].workers == running.workers) {
      running.epochs += remainder.phases[0].epochs;
      next = 1;
    }
    out.phases.push_back(running);
  }
  for (; next < remainder.phases.size(); ++next) out.phases.push_back(remainder.phases[next]);
  out.cost = executed.cost + remainder.cost;
  out.duration_seconds = executed.duration_seconds + remainder.duration_seconds;
  out.loss_mean = remainder.loss_mean;
  out.loss_stddev = remainder.loss_stddev;
  out.probability = remainder.probability;
  out.algorithm = remainder.algorithm;
  out.solve_seconds = remainder.solve_seconds;
  out.lower_bound.reset();
  if (remainder.lower_bound) out.lower_bound = executed.cost + *remainder.lower_bound;
  out.budget_limited = remainder.budget_limited;
  out.revision = current.revision;
  return out;
}

bool changes_course(const PlanRecord& current, const PlanRecord& next, const Position& position) {
  if (current.datasets != next.datasets) return true;
  if (current.phases.size() != next.phases.size()) return true;
  for (std::size_t i = position.phase; i < current.phases.size(); ++i) {
    if (!(current.phases[i] == next.phases[i])) return true;
  }
  return false;
}

}  // namespace depl::controller
