// Internal to the solver: the evaluator's arithmetic without its reporting (no strings; no
// allocation but for a deadline on pools with interruptions), for searches that score many
// candidate plans. Agrees with evaluate() bit for bit
// (tests/solver/plan_scorer_test.cpp); every plan solve() returns still goes through evaluate().
#pragma once

#include "depl/solver/plan.hpp"
#include "search_context.hpp"

namespace depl::solver::internal {

struct Score {
  bool structural = false;  // capacity, workers, horizon, switches, consecutive variants differ
  bool guarantee = false;   // with the context's kappa
  bool deadline = true;
  bool budget = true;
  double cost = 0;
  double seconds = 0;
  double mean = 0;
  double variance = 0;  // of the loss reported after the last epoch (nu^2 included)
  int switches = 0;
  bool feasible() const { return structural && guarantee && deadline && budget; }
};

// `plan.datasets` must match `data.datasets`.
Score score_plan(const SearchContext& ctx, const SelectionData& data, const Plan& plan);

// Total order used everywhere a plan is preferred to another: less cost, then less time, then
// fewer phases (docs/depl-model.md section 2), with a relative tolerance against rounding noise.
bool better_plan(double cost_a, double seconds_a, std::size_t phases_a, double cost_b,
                 double seconds_b, std::size_t phases_b);

}  // namespace depl::solver::internal
