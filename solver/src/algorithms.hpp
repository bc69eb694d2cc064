// Internal to the solver: one entry point per algorithm, dispatched by solve() (solve.cpp).
// DepL and EXP share solve_depl (EXP passes kappa = 0); OPT and FULL are the baselines of
// docs/depl-model.md section 4.
#pragma once

#include "budget_meter.hpp"
#include "depl/solver/solve.hpp"

namespace depl::solver::internal {

// `explain`: false when the caller only wants a feasible plan (an infeasible result then has no
// reason and no closest plan).
SolveResult solve_depl(const Problem& problem, const SolveOptions& options, Algorithm algorithm,
                       double kappa, BudgetMeter& meter, bool explain = true);
Expected<SolveResult> solve_opt(const Problem& problem, const SolveOptions& options,
                                BudgetMeter& meter);
SolveResult solve_full(const Problem& problem, const SolveOptions& options, BudgetMeter& meter);

// The share of a time budget the plan's search may use; the certificate has the rest.
inline constexpr double kPlanShareOfTime = 0.8;

// The reason of a result the budget cut short before any plan was found.
std::string budget_reason(const SolveBudget& budget, BudgetStop stop);

}  // namespace depl::solver::internal
