// Internal to the solver: DepL's outer loop (docs/depl-model.md section 3, step 1), choosing the
// set D of datasets to train on. Up to 10 datasets every non-empty subset is tried; beyond that,
// greedy by effectiveness (least label noise, then quality, locality, size) followed by
// add/drop/swap local search. Inner results are memoised per D by the SelectionSolver.
#pragma once

#include <optional>
#include <vector>

#include "selection_solver.hpp"

namespace depl::solver::internal {

inline constexpr std::size_t kExhaustiveDatasets = 10;

// The best plan meeting guarantee and deadline over the selections tried (budget not applied),
// or nullopt when none was found.
std::optional<Candidate> select_datasets(const SearchContext& ctx, SelectionSolver& solver);

}  // namespace depl::solver::internal
