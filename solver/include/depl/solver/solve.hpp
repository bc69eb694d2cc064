// The DepL solver (docs/depl-model.md section 3) and the baselines of section 4. Takes a valid
// Problem, returns a SolveResult by value. Every reported figure is the exact evaluator's.
// No I/O; the only clock it reads is the budget's (injected). Thread-safe: concurrent solves
// share nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <stop_token>
#include <string>
#include <vector>

#include "depl/common/clock.hpp"
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

// What one solve may spend. The searches check it as they go (every few hundred states); when
// it runs out, or `stop` is requested, the solve returns the best plan found by then, marked in
// SolveResult::stopped. Zero means no limit.
struct SolveBudget {
  std::chrono::milliseconds time{0};
  // The solver's own working memory (search labels, queues, bound tables, memoised selections),
  // as it accounts for it; the process's footprint is this plus the Problem and the caller's.
  std::size_t memory_bytes = 0;
  std::stop_token stop;          // cancellation (controller shutdown, job deletion)
  const Clock* clock = nullptr;  // nullptr: the steady clock
};

// The budget the CLI and the controller give a solve unless told otherwise: the largest job
// the solver admits is planned, or declared over budget, within it, and four concurrent solves
// fit the controller's 512Mi (docs/benchmarks.md, "Solver budget").
inline constexpr std::chrono::milliseconds kDefaultTimeBudget{10'000};
inline constexpr std::size_t kDefaultMemoryBudget = std::size_t{96} << 20;

enum class BudgetStop {
  None,       // the solve ran to completion
  Time,       // SolveBudget::time ran out
  Memory,     // SolveBudget::memory_bytes would have been exceeded
  Cancelled,  // SolveBudget::stop was requested
};
const char* to_string(BudgetStop stop);

struct SolveOptions {
  Algorithm algorithm = Algorithm::DepL;
  // Discretisation step of the expanded graph, relative to the loss range (l0 - floor).
  double eta = 0.002;
  // Opt refuses instances whose search space exceeds this many candidate plans.
  std::size_t opt_max_plans = 20'000'000;
  SolveBudget budget;
  // The certificate (DepL only): its search stops once it has proved the plan within this
  // relative gap of the optimum (a smaller gap costs more search). Off: no certificate.
  bool certify = true;
  double certificate_gap = 0.005;
};

// Why no plan was found, for people and for the controller's status.
struct Infeasibility {
  // The constraint that binds: "guarantee", "deadline", "budget", "capacity", "horizon".
  std::string binding;
  double best_probability = 0;     // best P(target) reachable ignoring deadline and budget
  double least_seconds = 0;        // least time of a plan meeting the guarantee (0 if none)
  double least_cost = 0;           // least cost of a plan meeting the guarantee (0 if none)
  // False when a search behind the explanation was cut (the solve's budget, or the search's own
  // effort cap): the figures are what it found by then, and `reason` says so. The plan's search
  // itself was complete unless SolveResult::stopped says otherwise.
  bool complete = true;
};

struct SolveStats {
  std::size_t dataset_sets = 0;    // dataset selections evaluated
  std::size_t placements = 0;      // Pareto placements kept, summed over variants and selections
  std::size_t graph_states = 0;    // expanded-graph states visited
  std::size_t plans_checked = 0;   // candidate plans scored by the exact evaluator
  std::size_t bound_classes = 0;   // selection classes the certificate searched
  std::size_t bound_searches = 0;  // searches the certificate ran
  std::size_t bound_work = 0;      // epochs the certificate's searches stepped through
};

// How far a plan can be from the optimum: no plan that meets the guarantee, the deadline and the
// budget costs less than lower_bound (over every dataset selection, variant sequence, switch
// and placement the model admits). gap = (cost - lower_bound) / cost.
struct Certificate {
  double lower_bound = 0;
  double gap = std::numeric_limits<double>::infinity();  // infinite when no plan was found
  // False when the bound's search stopped early (budget, or its own effort cap): the bound is
  // still valid, only weaker than it could be.
  bool complete = false;
};

struct SolveResult {
  bool feasible = false;
  Algorithm algorithm = Algorithm::DepL;
  Plan plan;         // the best plan found; when infeasible, the closest one (may be empty)
  Figures figures;   // evaluate(problem, plan)
  std::string reason;  // when infeasible: a sentence for people
  Infeasibility infeasibility;
  SolveStats stats;
  Certificate certificate;
  // Not None when the budget or a cancellation cut the solve short: `plan` is the best found by
  // then (feasible says whether there was one), and `reason` says so when none was found.
  BudgetStop stopped = BudgetStop::None;
};

// Solves. Fails (error value) only when the algorithm refuses the instance, e.g. Opt on an
// instance too large to enumerate; an infeasible problem is a result, not an error.
Expected<SolveResult> solve(const Problem& problem, const SolveOptions& options = {});

}  // namespace depl::solver
