#include "depl/solver/solve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "algorithms.hpp"
#include "dataset_selection.hpp"
#include "explain.hpp"

namespace depl::solver {

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::DepL:
      return "depl";
    case Algorithm::Opt:
      return "opt";
    case Algorithm::Exp:
      return "exp";
    case Algorithm::Full:
      return "full";
  }
  return "depl";
}

Expected<Algorithm> parse_algorithm(std::string_view name) {
  for (Algorithm a : {Algorithm::DepL, Algorithm::Opt, Algorithm::Exp, Algorithm::Full}) {
    if (name == to_string(a)) return a;
  }
  return error(fmt::format("algorithm: must be one of depl, opt, exp, full, got \"{}\"", name));
}

namespace internal {
namespace {

std::vector<Candidate> ranked_plans(const SelectionSolver& solver) {
  std::vector<Candidate> out;
  for (const auto& [d, outcome] : solver.outcomes()) {
    if (outcome.best) out.push_back(*outcome.best);
  }
  std::sort(out.begin(), out.end(),
            [](const Candidate& a, const Candidate& b) { return better(a, b); });
  return out;
}

}  // namespace

SolveResult solve_depl(const Problem& problem, const SolveOptions& options, Algorithm algorithm,
                       double kappa) {
  SolveResult result;
  result.algorithm = algorithm;
  const SearchContext ctx = make_context(problem, kappa);
  SelectionSolver solver(ctx, options.eta, result.stats);
  const std::optional<Candidate> best = select_datasets(ctx, solver);
  const bool exp = algorithm == Algorithm::Exp;

  if (best && best->score.budget) {
    // The selection's best first, then the others, in case the exact evaluator disagrees.
    std::vector<Candidate> candidates{*best};
    for (Candidate& c : ranked_plans(solver)) {
      if (!(c.plan == best->plan)) candidates.push_back(std::move(c));
    }
    for (const Candidate& c : candidates) {
      if (!c.score.budget) break;  // ranked by cost: the rest is over budget too
      Figures figures = evaluate(problem, c.plan);
      ++result.stats.plans_checked;
      if (exp) {
        // EXP's own criterion is the mean; the figures are still the true ones.
        result.plan = c.plan;
        result.figures = std::move(figures);
        result.feasible = result.figures.feasible;
        if (!result.feasible) {
          result.infeasibility.binding = "guarantee";
          result.infeasibility.best_probability = result.figures.probability;
          result.infeasibility.least_cost = result.figures.cost;
          result.infeasibility.least_seconds = result.figures.duration_seconds;
          result.reason = fmt::format(
              "EXP plans for the expected loss only: its plan reaches a mean loss of {:.4g} but "
              "P(target) = {:.3f} < {:.3g}.",
              result.figures.loss_mean, result.figures.probability, problem.target.probability);
        }
        return result;
      }
      if (figures.feasible) {
        result.feasible = true;
        result.plan = c.plan;
        result.figures = std::move(figures);
        return result;
      }
    }
  }

  SearchFindings findings;
  std::vector<std::pair<double, std::vector<std::size_t>>> by_cost;
  for (const auto& [d, outcome] : solver.outcomes()) {
    if (outcome.cheapest) by_cost.emplace_back(outcome.cheapest->score.cost, d);
    findings.selections.push_back(d);
  }
  std::sort(by_cost.begin(), by_cost.end());
  std::sort(findings.selections.begin(), findings.selections.end(),
            [&](const auto& a, const auto& b) {
              return effective_samples(problem, a) > effective_samples(problem, b);
            });
  constexpr std::size_t kFastestSearches = 16;
  for (std::size_t i = 0; i < by_cost.size(); ++i) {
    SelectionOutcome& o = solver.cheapest(by_cost[i].second);
    if (!findings.cheapest || better(*o.cheapest, *findings.cheapest)) {
      findings.cheapest = o.cheapest;
    }
    if (o.best && (!findings.deadline_best || better(*o.best, *findings.deadline_best))) {
      findings.deadline_best = o.best;
    }
    if (i < kFastestSearches) {
      solver.with_fastest(by_cost[i].second);
      if (o.fastest &&
          (!findings.fastest || o.fastest->score.seconds < findings.fastest->score.seconds)) {
        findings.fastest = o.fastest;
      }
    }
  }
  explain_infeasible(ctx, findings, options.eta, result);
  if (exp && result.infeasibility.binding == "guarantee") {
    result.reason = "EXP: " + result.reason;
  }
  return result;
}

}  // namespace internal

Expected<SolveResult> solve(const Problem& problem, const SolveOptions& options) {
  if (!(options.eta > 0) || !(options.eta <= 1)) {
    return error(fmt::format("eta: must be in (0, 1], got {}", options.eta));
  }
  if (problem.models.empty() || problem.datasets.empty() || problem.pools.empty()) {
    return error("problem: needs at least one dataset, one model and one pool");
  }
  switch (options.algorithm) {
    case Algorithm::DepL:
      return internal::solve_depl(problem, options, Algorithm::DepL,
                                  guarantee_kappa(problem.target));
    case Algorithm::Exp:
      return internal::solve_depl(problem, options, Algorithm::Exp, 0.0);
    case Algorithm::Opt:
      return internal::solve_opt(problem, options);
    case Algorithm::Full:
      return internal::solve_full(problem, options);
  }
  return error("algorithm: unknown");
}

}  // namespace depl::solver
