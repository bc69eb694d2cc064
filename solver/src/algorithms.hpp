// Internal to the solver: one entry point per algorithm, dispatched by solve() (solve.cpp).
// DepL and EXP share solve_depl (EXP passes kappa = 0); OPT and FULL are the baselines of
// docs/depl-model.md section 4.
#pragma once

#include "depl/solver/solve.hpp"

namespace depl::solver::internal {

SolveResult solve_depl(const Problem& problem, const SolveOptions& options, Algorithm algorithm,
                       double kappa);
Expected<SolveResult> solve_opt(const Problem& problem, const SolveOptions& options);
SolveResult solve_full(const Problem& problem, const SolveOptions& options);

}  // namespace depl::solver::internal
