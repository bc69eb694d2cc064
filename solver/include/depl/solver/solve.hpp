// The DepL solver (docs/depl-model.md section 3) and the baselines of section 4. Takes a valid
// Problem, returns a SolveResult by value. Every reported figure is the exact evaluator's.
// Pure: no I/O, no clocks (callers time it); thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "depl/common/expected.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

enum class Algorithm {
  DepL,  // the paper's decomposition: datasets x placement Pareto sets x expanded-graph schedule
  Opt,   // exhaustive search; small instances only
  Exp,   // DepL's search with kappa = 0: only the mean must reach the target
  Full,  // one phase of the largest variant on all datasets, cheapest placement
};

const char* to_string(Algorithm algorithm);
Expected<Algorithm> parse_algorithm(std::string_view name);

struct SolveOptions {
  Algorithm algorithm = Algorithm::DepL;
  // Discretisation step of the expanded graph, relative to the loss range (l0 - floor).
  double eta = 0.002;
  // Opt refuses instances whose search space exceeds this many candidate plans.
  std::size_t opt_max_plans = 20'000'000;
};

// Why no plan was found, for people and for the controller's status.
struct Infeasibility {
  // The constraint that binds: "guarantee", "deadline", "budget", "capacity", "horizon".
  std::string binding;
  double best_probability = 0;     // best P(target) reachable ignoring deadline and budget
  double least_seconds = 0;        // least time of a plan meeting the guarantee (0 if none)
  double least_cost = 0;           // least cost of a plan meeting the guarantee (0 if none)
};

struct SolveStats {
  std::size_t dataset_sets = 0;    // dataset selections evaluated
  std::size_t placements = 0;      // Pareto placements kept, summed over variants and selections
  std::size_t graph_states = 0;    // expanded-graph states visited
  std::size_t plans_checked = 0;   // candidate plans scored by the exact evaluator
};

struct SolveResult {
  bool feasible = false;
  Algorithm algorithm = Algorithm::DepL;
  Plan plan;         // the best plan found; when infeasible, the closest one (may be empty)
  Figures figures;   // evaluate(problem, plan)
  std::string reason;  // when infeasible: a sentence for people
  Infeasibility infeasibility;
  SolveStats stats;
};

// Solves. Fails (error value) only when the algorithm refuses the instance, e.g. Opt on an
// instance too large to enumerate; an infeasible problem is a result, not an error.
Expected<SolveResult> solve(const Problem& problem, const SolveOptions& options = {});

}  // namespace depl::solver
