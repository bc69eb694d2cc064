// `kubectl-depl simulate` output: the Monte Carlo result next to the evaluator's prediction,
// as a JSON document (with the plan) or a table for people.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "depl/cli/plan_report.hpp"
#include "depl/common/expected.hpp"
#include "depl/solver/simulate.hpp"

namespace depl::cli {

// "gaussian" | "student-t".
const char* noise_name(solver::Noise noise);
Expected<solver::Noise> parse_noise(std::string_view name);

// {"predictedProbability", "empiricalProbability", "interval": [lo, hi], "runs", "reached",
//  "seed", "noise", "standardError", "meanFinalLoss", "predictedLossMean",
//  "consistent" (prediction inside the interval), "plan": plan_to_json(...)}.
nlohmann::json simulation_to_json(const solver::Problem& problem, const solver::SolveResult& result,
                                  const solver::SimulationOptions& options,
                                  const solver::SimulationResult& simulation,
                                  std::optional<SolveTiming> timing = std::nullopt);

// The plan table followed by predicted vs empirical probability with the interval.
std::string simulation_to_table(const solver::Problem& problem, const solver::SolveResult& result,
                                const solver::SimulationOptions& options,
                                const solver::SimulationResult& simulation);

}  // namespace depl::cli
