// The solver's fast scorer must agree with the exact evaluator bit for bit: searches rank plans
// with it, and OPT's optimality rests on it.
#include "../../solver/src/plan_scorer.hpp"

#include <gtest/gtest.h>

#include "depl/solver/testing/instance_families.hpp"

namespace depl::solver::internal {
namespace {

TEST(PlanScorer, AgreesWithEvaluatorOnRandomPlans) {
  int feasible = 0;
  for (int seed = 1; seed <= 200; ++seed) {
    Problem p = testing::small_instance(static_cast<std::uint64_t>(seed));
    testing::InstanceRng rng(static_cast<std::uint64_t>(seed) * 7);
    if (seed % 4 == 0) {
      p.start = StartState{p.models[0].name, p.pools[0].name, 1.0, 0.001};
    }
    Plan plan;
    for (std::size_t d = 0; d < p.datasets.size(); ++d) {
      if (d == 0 || rng.chance(0.5)) plan.datasets.push_back(d);
    }
    const int phases = rng.integer(1, 3);
    for (int i = 0; i < phases; ++i) {
      plan.phases.push_back(
          {static_cast<std::size_t>(rng.integer(0, static_cast<int>(p.models.size()) - 1)),
           rng.integer(1, 8),
           static_cast<std::size_t>(rng.integer(0, static_cast<int>(p.pools.size()) - 1)),
           rng.integer(1, 3)});
    }
    const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
    const SelectionData data = make_selection_data(ctx, plan.datasets);
    const Score s = score_plan(ctx, data, plan);
    const Figures f = evaluate(p, plan);
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    EXPECT_EQ(s.cost, f.cost);
    EXPECT_EQ(s.seconds, f.duration_seconds);
    EXPECT_EQ(s.mean, f.loss_mean);
    EXPECT_EQ(std::sqrt(s.variance), f.loss_stddev);
    EXPECT_EQ(s.guarantee, f.meets_guarantee);
    EXPECT_EQ(s.feasible(), f.feasible);
    feasible += f.feasible;
  }
  EXPECT_GT(feasible, 0);
}

}  // namespace
}  // namespace depl::solver::internal
