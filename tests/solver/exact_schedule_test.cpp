// The plan's search on one dataset selection: the expanded graph keeps a phase going while its
// epochs move the loss by less than a cell, the exact search (no rounding) prices a later phase's
// staging, and DepL's plan is never dearer than the exact search's on the plan's own selection.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "../../solver/src/lower_bound.hpp"
#include "../../solver/src/selection_solver.hpp"
#include "depl/solver/solve.hpp"
#include "depl/solver/testing/instance_families.hpp"

namespace depl::solver::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Large-family seed 34 on datasets {0, 4, 8, 13}: the cheapest plan is one phase of 48 epochs
// whose last epochs each lower the mean by less than the graph's cell (0.0026 against 0.0034).
// A graph that lets the settled parent in the same cell drop its child ends the phase after 44
// epochs and switches to the full model (0.359 against 0.213).
TEST(ScheduleGraph, AnEpochThatStaysInItsCellDoesNotEndThePhase) {
  const Problem p = testing::large_family_instance(34);
  const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
  SolveStats stats;
  SelectionSolver solver(ctx, 0.002, stats);
  const std::vector<std::size_t> datasets{0, 4, 8, 13};
  const SelectionOutcome& graph = solver.cheapest(datasets);
  ASSERT_TRUE(graph.cheapest.has_value());
  const std::optional<Plan> exact = exact_schedule(ctx, solver.data(datasets), kInf, 0.002);
  ASSERT_TRUE(exact.has_value());
  const Figures best = evaluate(p, *exact);
  ASSERT_TRUE(best.feasible);
  ASSERT_EQ(exact->phases.size(), 1u);
  EXPECT_LE(graph.cheapest->score.cost, best.cost * (1 + 1e-9));
  EXPECT_EQ(graph.cheapest->plan, *exact);
}

// Paper-like seed 10 on datasets {0, 3}: with a later phase's staging left out, the search's
// cheapest path trains the first phase in one pool and the second in another, a plan that
// really costs 6% more than its weight; priced, the search's weight is the plan's cost.
TEST(ExactSchedule, ALaterPhaseInAnotherPoolPaysItsStaging) {
  const Problem p = testing::paper_like_instance(10);
  const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
  const SelectionData data = make_selection_data(ctx, {0, 3});
  BoundSearchOptions options;
  Heuristic heuristic(ctx, data, options.weights, options.eta, options.cells);
  double relaxed_cost = 0;
  for (bool staged : {false, true}) {
    options.later_staging = staged;
    const BoundSearchResult r = bound_search(ctx, data, options, *heuristic.table);
    ASSERT_TRUE(r.complete && r.plan.has_value());
    const Figures figures = evaluate(p, *r.plan);
    ASSERT_TRUE(figures.feasible);
    EXPECT_LE(r.bound, figures.cost * (1 + 1e-9)) << "staged " << staged;
    if (!staged) {
      relaxed_cost = figures.cost;
      EXPECT_GT(figures.cost, r.bound * 1.01);  // the relaxation's minimiser, priced
    } else {
      EXPECT_NEAR(figures.cost, r.bound, 1e-9 * figures.cost);
      EXPECT_LT(figures.cost, relaxed_cost);
    }
  }
}

// DepL's plan (without the certificate) against the exact search on the plan's own selection:
// never dearer, on the paper-like family.
TEST(ExactSchedule, DeplsPlanIsTheExactOptimumOfItsSelection) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Problem p = testing::paper_like_instance(seed);
    SolveOptions options;
    options.certify = false;
    const auto result = solve(p, options);
    ASSERT_TRUE(result.has_value() && result->feasible) << "seed " << seed;
    const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
    const SelectionData data = make_selection_data(ctx, result->plan.datasets);
    const std::optional<Plan> exact = exact_schedule(ctx, data, kInf, options.eta);
    ASSERT_TRUE(exact.has_value()) << "seed " << seed;
    const Figures best = evaluate(p, *exact);
    EXPECT_LE(result->figures.cost, best.cost * (1 + 1e-9)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace depl::solver::internal
