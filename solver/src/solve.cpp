#include "depl/solver/solve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "algorithms.hpp"
#include "dataset_selection.hpp"
#include "explain.hpp"
#include "lower_bound.hpp"

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

std::string budget_reason(const SolveBudget& budget, BudgetStop stop) {
  switch (stop) {
    case BudgetStop::Time:
      return fmt::format(
          "The solver's time budget ({} ms) ran out before it found a plan that meets the "
          "guarantee; the job may still be feasible: raise the budget or make the job smaller.",
          budget.time.count());
    case BudgetStop::Memory:
      return fmt::format(
          "The solver's memory budget ({} MiB) ran out before it found a plan that meets the "
          "guarantee; the job may still be feasible: raise the budget or make the job smaller.",
          budget.memory_bytes >> 20);
    case BudgetStop::Cancelled:
      return "The solve was cancelled before it found a plan.";
    case BudgetStop::None:
      break;
  }
  return "";
}

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
                       double kappa, BudgetMeter& meter) {
  SolveResult result;
  result.algorithm = algorithm;
  const SearchContext ctx = make_context(problem, kappa, &meter);
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

// The certificate of a feasible result; a cheaper plan the bound's searches come across replaces
// the result's (it meets everything the result's plan meets: the exact evaluator says so).
void certify(const Problem& problem, const SolveOptions& options, double kappa,
             BudgetMeter& meter, SolveResult& result) {
  if (!result.feasible) return;
  if (result.algorithm == Algorithm::Opt) {
    result.certificate = {result.figures.cost, 0.0, true};
    return;
  }
  // Baselines are measured, not certified.
  if (result.algorithm != Algorithm::DepL || !options.certify) return;
  const SearchContext ctx = make_context(problem, kappa, &meter);
  const double target = result.figures.cost * (1 - options.certificate_gap);
  const LowerBound bound = certify_lower_bound(ctx, target, options.eta, std::nullopt);
  result.stats.bound_classes = bound.classes;
  result.stats.bound_searches = bound.searches;
  if (bound.plan) {
    Figures figures = evaluate(problem, *bound.plan);
    if (figures.feasible && better_plan(figures.cost, figures.duration_seconds,
                                        bound.plan->phases.size(), result.figures.cost,
                                        result.figures.duration_seconds,
                                        result.plan.phases.size())) {
      result.plan = *bound.plan;
      result.figures = std::move(figures);
    }
  }
  const double cost = result.figures.cost;
  // The bound's arithmetic differs from the evaluator's in the last bits.
  const double lower = std::max(0.0, std::min(bound.cost, cost) * (1 - 1e-9));
  result.certificate.lower_bound = lower;
  result.certificate.gap = cost > 0 ? (cost - lower) / cost : 0.0;
  result.certificate.complete = bound.complete;
}

}  // namespace internal

const char* to_string(BudgetStop stop) {
  switch (stop) {
    case BudgetStop::None:
      return "none";
    case BudgetStop::Time:
      return "time";
    case BudgetStop::Memory:
      return "memory";
    case BudgetStop::Cancelled:
      return "cancelled";
  }
  return "none";
}

Expected<SolveResult> solve(const Problem& problem, const SolveOptions& options) {
  if (!(options.eta > 0) || !(options.eta <= 1)) {
    return error(fmt::format("eta: must be in (0, 1], got {}", options.eta));
  }
  if (!(options.certificate_gap >= 0) || !(options.certificate_gap < 1)) {
    return error(
        fmt::format("certificate_gap: must be in [0, 1), got {}", options.certificate_gap));
  }
  if (problem.models.empty() || problem.datasets.empty() || problem.pools.empty()) {
    return error("problem: needs at least one dataset, one model and one pool");
  }
  internal::BudgetMeter meter(options.budget);
  Expected<SolveResult> result = error("algorithm: unknown");
  double kappa = guarantee_kappa(problem.target);
  switch (options.algorithm) {
    case Algorithm::DepL:
      result = internal::solve_depl(problem, options, Algorithm::DepL, kappa, meter);
      break;
    case Algorithm::Exp:
      kappa = 0;
      result = internal::solve_depl(problem, options, Algorithm::Exp, kappa, meter);
      break;
    case Algorithm::Opt:
      result = internal::solve_opt(problem, options, meter);
      break;
    case Algorithm::Full:
      result = internal::solve_full(problem, options, meter);
      break;
  }
  if (!result) return result;
  internal::certify(problem, options, kappa, meter, *result);
  result->stopped = meter.stopped();
  if (result->stopped != BudgetStop::None && !result->feasible) {
    result->infeasibility.binding = "solveBudget";
    result->reason = internal::budget_reason(options.budget, result->stopped);
  }
  return result;
}

}  // namespace depl::solver
