// The solve budget: time (read from an injected clock that moves with every read, so that the
// test never depends on the machine's speed), memory as the solver accounts for it, and
// cancellation. A cut solve returns its best plan so far, marked, and the exact evaluator
// accepts it; one without a plan says why.
#include "depl/solver/solve.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stop_token>

#include "depl/solver/testing/instance_families.hpp"
#include "support/stepping_clock.hpp"

namespace depl::solver {
namespace {

using testing::SteppingClock;

SolveResult solve_with(const Problem& p, const SolveBudget& budget) {
  SolveOptions o;
  o.budget = budget;
  auto r = solve(p, o);
  EXPECT_TRUE(r.has_value());
  return r ? *r : SolveResult{};
}

void expect_usable(const Problem& p, const SolveResult& r) {
  if (r.feasible) {
    EXPECT_TRUE(evaluate(p, r.plan).feasible);
    EXPECT_LE(r.certificate.lower_bound, r.figures.cost);
  } else {
    EXPECT_FALSE(r.reason.empty());
  }
}

TEST(Budget, UnlimitedByDefault) {
  const Problem p = testing::paper_like_instance(1);
  const SolveResult r = solve_with(p, {});
  EXPECT_EQ(r.stopped, BudgetStop::None);
  EXPECT_TRUE(r.feasible);
}

// Each clock read is a millisecond: a 40 ms budget allows 40 reads, one every 256 search steps.
TEST(Budget, TimeStopsTheSearchAndKeepsTheBestPlan) {
  const Problem p = testing::large_instance(1, 20, 6, 12, 300);
  SteppingClock clock(std::chrono::milliseconds(1));
  SolveBudget budget;
  budget.time = std::chrono::milliseconds(40);
  budget.clock = &clock;
  const SolveResult r = solve_with(p, budget);
  EXPECT_EQ(r.stopped, BudgetStop::Time);
  EXPECT_LE(clock.reads(), 60);  // it stopped soon after the budget ran out
  expect_usable(p, r);
  EXPECT_TRUE(r.feasible);  // one-phase plans come first, in microseconds
  EXPECT_FALSE(r.certificate.complete);
}

TEST(Budget, ZeroTimeLeftStillAnswers) {
  const Problem p = testing::small_instance(5);
  SteppingClock clock(std::chrono::hours(1));
  SolveBudget budget;
  budget.time = std::chrono::milliseconds(1);
  budget.clock = &clock;
  const SolveResult r = solve_with(p, budget);
  EXPECT_EQ(r.stopped, BudgetStop::Time);
  expect_usable(p, r);
  if (!r.feasible) {
    EXPECT_EQ(r.infeasibility.binding, "solveBudget");
    EXPECT_NE(r.reason.find("time budget"), std::string::npos) << r.reason;
  }
}

TEST(Budget, CancellationStopsAtOnce) {
  const Problem p = testing::large_instance(2, 20, 6, 12, 300);
  std::stop_source source;
  source.request_stop();
  SolveBudget budget;
  budget.stop = source.get_token();
  const SolveResult r = solve_with(p, budget);
  EXPECT_EQ(r.stopped, BudgetStop::Cancelled);
  EXPECT_EQ(r.stats.graph_states, 0u);
  expect_usable(p, r);
}

TEST(Budget, MemoryLimitsEachSearchAndTheSolveGoesOn) {
  const Problem p = testing::large_instance(1, 20, 6, 12, 300);
  SolveBudget budget;
  budget.memory_bytes = 256 * 1024;
  const SolveResult r = solve_with(p, budget);
  EXPECT_EQ(r.stopped, BudgetStop::Memory);
  expect_usable(p, r);
  EXPECT_TRUE(r.feasible);
  // Without the limit the same solve is not cut.
  EXPECT_EQ(solve_with(p, {}).stopped, BudgetStop::None);
}

// The largest job the solver admits ends within its (simulated) time budget.
TEST(Budget, LargestAdmittedJobEndsWithinTheBudget) {
  const Problem p = testing::largest_admitted_instance(1);
  SteppingClock clock(std::chrono::milliseconds(1));
  SolveBudget budget;
  budget.time = std::chrono::milliseconds(200);
  budget.memory_bytes = 96u << 20;
  budget.clock = &clock;
  const SolveResult r = solve_with(p, budget);
  EXPECT_NE(r.stopped, BudgetStop::None);
  EXPECT_LE(clock.reads(), 260);
  expect_usable(p, r);
}

}  // namespace
}  // namespace depl::solver
