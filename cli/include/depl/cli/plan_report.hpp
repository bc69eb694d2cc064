// A solver result as the CLI shows it: the JSON document of `kubectl-depl plan -o json|yaml`
// and the table people read. Every figure is recomputed here with the exact evaluator
// (solver::evaluate) on the returned plan, so the output cannot drift from the model.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "depl/solver/problem.hpp"
#include "depl/solver/solve.hpp"

namespace depl::cli {

// What the CLI measured around the solver call (not part of the pure result).
struct SolveTiming {
  double seconds = 0;
};

// {"feasible", "algorithm", "datasets", "phases": [{"model","epochs","pool","workers", ...}],
//  "predicted": {"cost","durationSeconds","lossMean","lossStddev","probability", ...},
//  "target", "violations", "stats", and "reason" + "infeasibility" when infeasible}.
// The schema is documented in docs/cli.md.
nlohmann::json plan_to_json(const solver::Problem& problem, const solver::SolveResult& result,
                            std::optional<SolveTiming> timing = std::nullopt);

// The human view: a phase table (model, pool, workers x GPUs, epochs, time, cost) and the
// totals (cost, duration, loss mean ± stddev, P(target) vs required), the reason when
// infeasible. Ends with '\n'.
std::string plan_to_table(const solver::Problem& problem, const solver::SolveResult& result);

// Feasible as the CLI reports it (JSON `feasible`, exit code 0 vs 3): the solver says so and the
// exact evaluator agrees on the returned plan.
bool plan_is_feasible(const solver::Problem& problem, const solver::SolveResult& result);

// "Gaussian" / "DistributionFree", as in the manifest.
const char* guarantee_name(solver::Guarantee guarantee);

}  // namespace depl::cli
