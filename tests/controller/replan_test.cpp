#include "depl/controller/replan.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

solver::Problem problem() {
  solver::Problem p;
  p.target.loss = 0.5;
  p.target.probability = 0.9;
  p.target.deadline_seconds = 10000;
  p.target.budget = 100;
  p.datasets = {{"a", 1000, 1, 0, {}}, {"b", 1000, 1, 0, {}}};
  solver::ModelVariant full{"full", "f", 1, 1e6, 1, {}};
  full.loss = {2, 0.1, 0.8, 0.01, 2000, 0};
  solver::ModelVariant small{"small", "s", 0.25, 1e5, 1, {}};
  small.loss = {2, 0.4, 0.7, 0.01, 2000, 0};
  p.models = {full, small};
  p.switching = {{"small", "full", 0.05, 0.01, 5}};
  p.pools = {{"a100", "A100", 8, 1000, 3.6, 1e9, 1e8, 0, {}, 0, 0}};
  p.training.max_epochs = 50;
  p.training.max_switches = 1;
  return p;
}

PlanRecord record() {
  PlanRecord r;
  r.datasets = {"a", "b"};
  r.phases = {{"small", 4, "a100", 2}, {"full", 6, "a100", 4}};
  r.revision = 1;
  return r;
}

TEST(Replan, PositionFollowsEpochs) {
  ProgressRecord progress;
  progress.phase = 1;
  progress.epoch = 6;
  Position pos = position_of(record(), progress);
  EXPECT_EQ(pos.phase, 1u);
  EXPECT_EQ(pos.phase_start_epoch, 4);
  EXPECT_EQ(pos.done_in_phase, 2);
}

TEST(Replan, RemainingProblemStartsFromObservedLoss) {
  solver::Problem p = problem();
  auto plan = to_solver_plan(record(), p);
  ASSERT_TRUE(plan.has_value());
  ProgressRecord progress;
  progress.phase = 1;
  progress.epoch = 6;
  Position pos = position_of(record(), progress);
  auto rest = remaining_problem(p, *plan, pos, 0.9);
  ASSERT_TRUE(rest.has_value()) << rest.error().message;
  ASSERT_TRUE(rest->start.has_value());
  EXPECT_EQ(rest->start->model, "full");
  EXPECT_EQ(rest->start->pool, "a100");
  EXPECT_DOUBLE_EQ(rest->start->loss_mean, 0.9);
  EXPECT_DOUBLE_EQ(rest->start->loss_variance, 0.0);
  EXPECT_EQ(rest->training.max_epochs, 44);
  EXPECT_EQ(rest->training.max_switches, 0);  // small -> full used the only switch
  EXPECT_TRUE(rest->fixed_datasets);
  // Spent: the executed prefix (small x4 on 2 workers, full x2 on 4) under the evaluator.
  solver::Plan prefix = executed_prefix(*plan, pos);
  solver::Problem unconstrained = p;
  unconstrained.target.deadline_seconds.reset();
  unconstrained.target.budget.reset();
  auto spent = solver::evaluate(unconstrained, prefix);
  EXPECT_NEAR(*rest->target.deadline_seconds, 10000 - spent.duration_seconds, 1e-9);
  EXPECT_NEAR(*rest->target.budget, 100 - spent.cost, 1e-12);
}

// A report is the loss's trajectory up to its own transient error: a re-plan from an observed
// loss starts with the reporting variant's nu^2, and one without a report carries on the
// prediction's persistent variance (not the report's).
TEST(Replan, ObservedLossCarriesTheReportsTransientNoise) {
  solver::Problem p = problem();
  p.models[0].loss.validation_noise_stddev = 0.03;  // full
  p.models[1].loss.validation_noise_stddev = 0.07;  // small
  auto plan = to_solver_plan(record(), p);
  ASSERT_TRUE(plan.has_value());
  ProgressRecord progress;
  progress.phase = 1;
  progress.epoch = 6;
  const Position pos = position_of(record(), progress);
  auto observed = remaining_problem(p, *plan, pos, 0.9);
  ASSERT_TRUE(observed.has_value()) << observed.error().message;
  EXPECT_DOUBLE_EQ(observed->start->loss_variance, 0.03 * 0.03);

  auto predicted = remaining_problem(p, *plan, pos, std::nullopt);
  ASSERT_TRUE(predicted.has_value()) << predicted.error().message;
  solver::Problem unconstrained = p;
  unconstrained.target.deadline_seconds.reset();
  unconstrained.target.budget.reset();
  const auto spent = solver::evaluate(unconstrained, executed_prefix(*plan, pos));
  EXPECT_DOUBLE_EQ(predicted->start->loss_variance, spent.loss_state_variance);
  EXPECT_NEAR(spent.loss_stddev * spent.loss_stddev - spent.loss_state_variance, 0.03 * 0.03,
              1e-15);
}

TEST(Replan, NothingRunYetMeansAFreshPlan) {
  solver::Problem p = problem();
  auto plan = to_solver_plan(record(), p);
  Position pos = position_of(record(), ProgressRecord{});
  auto rest = remaining_problem(p, *plan, pos, std::nullopt);
  ASSERT_TRUE(rest.has_value());
  EXPECT_FALSE(rest->start.has_value());
  EXPECT_EQ(rest->training.max_epochs, 50);
}

TEST(Replan, UsedUpAllowancesAreExplained) {
  solver::Problem p = problem();
  p.target.budget = 1e-6;
  auto plan = to_solver_plan(record(), p);
  ProgressRecord progress;
  progress.phase = 0;
  progress.epoch = 2;
  auto rest = remaining_problem(p, *plan, position_of(record(), progress), 1.0);
  ASSERT_FALSE(rest.has_value());
  EXPECT_NE(rest.error().message.find("budget"), std::string::npos);
}

TEST(Replan, SpliceExtendsTheRunningPhaseWhenItContinues) {
  ProgressRecord progress;
  progress.phase = 1;
  progress.epoch = 6;
  Position pos = position_of(record(), progress);
  PlanRecord rest;
  rest.phases = {{"full", 7, "a100", 4}};
  rest.cost = 2;
  rest.probability = 0.95;
  solver::Figures executed;
  executed.cost = 1;
  PlanRecord next = splice(record(), pos, executed, rest);
  ASSERT_EQ(next.phases.size(), 2u);
  EXPECT_EQ(next.phases[1].epochs, 9);  // 2 done + 7 more
  EXPECT_DOUBLE_EQ(next.cost, 3);
  EXPECT_DOUBLE_EQ(next.probability, 0.95);
  EXPECT_TRUE(changes_course(record(), next, pos));
}

// A bound on what remains, plus what has run, bounds the whole job from here on.
TEST(Replan, SpliceAddsTheCostRunToTheRemaindersLowerBound) {
  ProgressRecord progress;
  progress.phase = 1;
  progress.epoch = 6;
  Position pos = position_of(record(), progress);
  PlanRecord rest;
  rest.phases = {{"full", 7, "a100", 4}};
  rest.cost = 2;
  rest.lower_bound = 1.5;
  rest.budget_limited = true;
  solver::Figures executed;
  executed.cost = 1;
  PlanRecord next = splice(record(), pos, executed, rest);
  ASSERT_TRUE(next.lower_bound.has_value());
  EXPECT_DOUBLE_EQ(*next.lower_bound, 2.5);
  EXPECT_TRUE(next.budget_limited);
  PlanRecord certified = record();
  certified.lower_bound = 0.5;
  rest.lower_bound.reset();
  rest.budget_limited = false;
  next = splice(certified, pos, executed, rest);
  EXPECT_FALSE(next.lower_bound.has_value());  // the old bound was for the old problem
  EXPECT_FALSE(next.budget_limited);
}

TEST(Replan, SpliceCutsTheRunningPhaseWhenTheCourseChanges) {
  ProgressRecord progress;
  progress.phase = 0;
  progress.epoch = 3;
  Position pos = position_of(record(), progress);
  PlanRecord rest;
  rest.phases = {{"full", 5, "a100", 2}};
  PlanRecord next = splice(record(), pos, solver::Figures{}, rest);
  ASSERT_EQ(next.phases.size(), 2u);
  EXPECT_EQ(next.phases[0], (PhaseRecord{"small", 3, "a100", 2}));
  EXPECT_EQ(next.phases[1], (PhaseRecord{"full", 5, "a100", 2}));
}

TEST(Replan, SameCourseIsNotAChange) {
  ProgressRecord progress;
  progress.phase = 0;
  progress.epoch = 2;
  Position pos = position_of(record(), progress);
  PlanRecord rest;
  rest.phases = {{"small", 2, "a100", 2}, {"full", 6, "a100", 4}};
  PlanRecord next = splice(record(), pos, solver::Figures{}, rest);
  EXPECT_FALSE(changes_course(record(), next, pos));
}

TEST(Replan, SpentSoFarIsThePrefixWhateverTheDeadline) {
  solver::Problem p = problem();
  auto plan = to_solver_plan(record(), p);
  ASSERT_TRUE(plan.has_value());
  ProgressRecord progress;
  EXPECT_EQ(spent_so_far(p, *plan, position_of(record(), progress)).cost, 0.0) << "nothing has run";
  progress.phase = 1;
  progress.epoch = 6;
  const Position pos = position_of(record(), progress);
  p.target.deadline_seconds = 1;  // used up long ago: what ran still has its figures
  p.target.budget = 0.001;
  const solver::Figures spent = spent_so_far(p, *plan, pos);
  solver::Problem open = p;
  open.target.deadline_seconds.reset();
  open.target.budget.reset();
  const solver::Figures prefix = solver::evaluate(open, executed_prefix(*plan, pos));
  EXPECT_GT(spent.cost, 0.0);
  EXPECT_DOUBLE_EQ(spent.cost, prefix.cost);
  EXPECT_DOUBLE_EQ(spent.duration_seconds, prefix.duration_seconds);
  EXPECT_DOUBLE_EQ(spent.loss_mean, prefix.loss_mean);
}

TEST(JobStatus, PlanNamesMustExist) {
  solver::Problem p = problem();
  PlanRecord r = record();
  r.phases[1].pool = "gone";
  auto plan = to_solver_plan(r, p);
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("gone"), std::string::npos);
}

}  // namespace
}  // namespace depl::controller
