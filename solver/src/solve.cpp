#include "depl/solver/solve.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "algorithms.hpp"
#include "dataset_selection.hpp"
#include "depl/solver/parse.hpp"
#include "explain.hpp"
#include "lower_bound.hpp"
#include "plan_scorer.hpp"

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

// One phase of one variant on every dataset, the fewest epochs that meet the guarantee, its
// cheapest placement within the deadline: plans found in microseconds, so that a solve the
// budget cuts short still has one when the expanded graph is too large to reach a goal in time.
std::vector<Candidate> single_phase_plans(const SearchContext& ctx, SelectionSolver& solver) {
  std::vector<Candidate> out;
  const Problem& problem = *ctx.problem;
  std::vector<std::size_t> all(problem.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const SelectionData& data = solver.data(all);
  for (std::size_t v = 0; v < problem.models.size(); ++v) {
    if (data.pareto[v].empty() || ctx.out_of_budget_now()) continue;
    LossState state = initial_state(ctx, v);
    if (ctx.start_model != kNone && ctx.start_model != static_cast<int>(v)) {
      const int sw = ctx.switch_index[static_cast<std::size_t>(ctx.start_model)][v];
      if (sw == kNone || ctx.max_switches() < 1) continue;
      const Switch& s = problem.switching[static_cast<std::size_t>(sw)];
      state.mean += s.jump_mean;
      state.variance += s.jump_stddev * s.jump_stddev;
    }
    for (int e = 1; e <= ctx.horizon(); ++e) {
      state = step(data.dynamics[v], state);
      if (!meets(ctx.kappa, problem.target.loss, state.mean, reported(data.dynamics[v], state))) {
        continue;
      }
      const Placement& any = data.pareto[v].front();
      const Plan plan{all, {{v, e, any.pool, any.workers}}};
      std::size_t checked = 0;
      if (auto c = refine_placements(ctx, data, plan, true, checked)) out.push_back(*c);
      break;
    }
  }
  return out;
}

// The expanded graph rounds the loss state to decide which paths to keep, so on a selection it
// may miss the cheapest schedule by an epoch or a phase. The exact search (no rounding) re-plans
// the best plan's selection and the next cheapest selections, each against the best plan so far.
constexpr std::size_t kExactSelections = 3;

void exact_schedules(const SearchContext& ctx, SelectionSolver& solver, double eta,
                     Candidate& best) {
  std::vector<std::vector<std::size_t>> selections{best.plan.datasets};
  for (const Candidate& c : ranked_plans(solver)) {
    if (selections.size() >= kExactSelections) break;
    if (std::find(selections.begin(), selections.end(), c.plan.datasets) == selections.end()) {
      selections.push_back(c.plan.datasets);
    }
  }
  for (const auto& datasets : selections) {
    if (ctx.out_of_budget_now()) return;
    const SelectionData& data = solver.data(datasets);
    std::optional<Plan> plan = exact_schedule(ctx, data, best.score.cost, eta);
    if (!plan) continue;
    Candidate c{std::move(*plan), {}};
    c.score = score_plan(ctx, data, c.plan);
    if (c.score.feasible() && better(c, best)) best = std::move(c);
  }
}

}  // namespace

SolveResult solve_depl(const Problem& problem, const SolveOptions& options, Algorithm algorithm,
                       double kappa, BudgetMeter& meter, bool explain) {
  SolveResult result;
  result.algorithm = algorithm;
  const SearchContext ctx = make_context(problem, kappa, &meter);
  SelectionSolver solver(ctx, options.eta, result.stats);
  const std::vector<Candidate> quick = single_phase_plans(ctx, solver);
  std::optional<Candidate> best = select_datasets(ctx, solver);
  for (const Candidate& c : quick) {
    if (c.score.deadline && (!best || better(c, *best))) best = c;
  }
  const bool exp = algorithm == Algorithm::Exp;
  if (!exp && best && best->score.budget) exact_schedules(ctx, solver, options.eta, *best);

  if (best && best->score.budget) {
    // The selection's best first, then the others, in case the exact evaluator disagrees.
    std::vector<Candidate> candidates{*best};
    std::vector<Candidate> others = ranked_plans(solver);
    for (const Candidate& c : quick) {
      if (c.score.deadline) others.push_back(c);
    }
    std::sort(others.begin(), others.end(),
              [](const Candidate& a, const Candidate& b) { return better(a, b); });
    for (Candidate& c : others) {
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
              "P(target) = {} < {}.",
              result.figures.loss_mean, probability_text(result.figures.probability),
              problem.target.probability);
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

  if (!explain) return result;
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
void certify(const Problem& problem, const SolveOptions& options, double kappa, BudgetMeter& meter,
             SolveResult& result) {
  if (!result.feasible) return;
  if (result.algorithm == Algorithm::Opt) {
    result.certificate = {result.figures.cost, 0.0, true};
    return;
  }
  // Baselines are measured, not certified.
  if (result.algorithm != Algorithm::DepL || !options.certify) return;
  const SearchContext ctx = make_context(problem, kappa, &meter);
  const double target = result.figures.cost * (1 - options.certificate_gap);
  const LowerBound bound =
      certify_lower_bound(ctx, target, options.eta, std::nullopt, options.certificate_gap);
  result.stats.bound_classes = bound.classes;
  result.stats.bound_searches = bound.searches;
  result.stats.bound_work = bound.work;
  if (bound.plan) {
    Figures figures = evaluate(problem, *bound.plan);
    if (figures.feasible &&
        better_plan(figures.cost, figures.duration_seconds, bound.plan->phases.size(),
                    result.figures.cost, result.figures.duration_seconds,
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

namespace {

bool has_interruptions(const Problem& problem) {
  return std::any_of(problem.pools.begin(), problem.pools.end(),
                     [](const Pool& p) { return p.interruptions_per_hour > 0; });
}

}  // namespace

// DepL's search prices interruptions exactly in its cost but weighs the deadline by the expected
// duration, and the guarantee at p rather than at p / P_time (docs/depl-model.md section 3,
// "Spot pools in the search"): its plan may fail the evaluator's chance constraint where
// another is feasible. So on pools with interruptions it also searches variants of the problem
// whose plans meet the promise more surely (the pools without interruptions alone; with a
// deadline, a tighter deadline and a larger loss probability), judges every plan found by the
// exact evaluator on the real problem, and returns the cheapest feasible one.
SolveResult solve_depl_with_interruptions(const Problem& problem, const SolveOptions& options,
                                          BudgetMeter& meter) {
  SolveResult result =
      solve_depl(problem, options, Algorithm::DepL, guarantee_kappa(problem.target), meter);
  if (!has_interruptions(problem)) return result;
  std::vector<Problem> variants;
  {
    Problem steady = problem;
    for (Pool& pool : steady.pools) {
      if (pool.interruptions_per_hour > 0) pool.gpus = 0;
    }
    variants.push_back(std::move(steady));
  }
  if (problem.target.deadline_seconds) {
    // (share of the promise given to time, deadline's factor)
    constexpr std::pair<double, double> kTightenings[] = {{0.99, 0.95}, {0.95, 0.85}};
    for (const auto& [time_share, factor] : kTightenings) {
      const double probability = problem.target.probability / time_share;
      if (!(probability < 1)) continue;
      Problem tighter = problem;
      tighter.target.probability = probability;
      tighter.target.deadline_seconds = *problem.target.deadline_seconds * factor;
      variants.push_back(std::move(tighter));
    }
  }
  for (const Problem& variant : variants) {
    // Only a feasible plan of a variant is used: an infeasible one needs no explanation.
    SolveResult other = solve_depl(variant, options, Algorithm::DepL,
                                   guarantee_kappa(variant.target), meter, false);
    result.stats.dataset_sets += other.stats.dataset_sets;
    result.stats.placements += other.stats.placements;
    result.stats.graph_states += other.stats.graph_states;
    result.stats.plans_checked += other.stats.plans_checked;
    if (!other.feasible) continue;
    Figures figures = evaluate(problem, other.plan);
    ++result.stats.plans_checked;
    if (!figures.feasible) continue;
    if (result.feasible &&
        !better_plan(figures.cost, figures.duration_seconds, other.plan.phases.size(),
                     result.figures.cost, result.figures.duration_seconds,
                     result.plan.phases.size())) {
      continue;
    }
    result.feasible = true;
    result.plan = std::move(other.plan);
    result.figures = std::move(figures);
    result.reason.clear();
    result.infeasibility = Infeasibility{};
  }
  return result;
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
  // The budget's promise (an answer within it) holds only for problems within the limits.
  if (const auto past = past_solver_limits(problem); !past.empty()) {
    return error(fmt::format("problem: past the solver's limits: {}", fmt::join(past, "; ")));
  }
  internal::BudgetMeter meter(options.budget);
  const bool certifying = options.algorithm == Algorithm::DepL && options.certify;
  // The plan's search leaves part of the time budget to the certificate.
  if (certifying) meter.soften(internal::kPlanShareOfTime);
  Expected<SolveResult> result = error("algorithm: unknown");
  double kappa = guarantee_kappa(problem.target);
  switch (options.algorithm) {
    case Algorithm::DepL:
      result = internal::solve_depl_with_interruptions(problem, options, meter);
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
  // Whether the plan's search was cut short (by the budget, or by its share of the time).
  BudgetStop stopped = meter.stopped();
  if (stopped == BudgetStop::None && meter.soft_stopped()) stopped = BudgetStop::Time;
  meter.clear_soft();
  if (result->feasible) result->certificate = {0.0, 1.0, false};  // until the certificate says more
  // OPT's plan is its own certificate when its enumeration ran to the end.
  if ((certifying || options.algorithm == Algorithm::Opt) && meter.stopped() == BudgetStop::None) {
    internal::certify(problem, options, kappa, meter, *result);
  }
  if (meter.stopped() == BudgetStop::Cancelled) stopped = BudgetStop::Cancelled;
  result->stopped = stopped;
  if (stopped != BudgetStop::None && !result->feasible) {
    result->infeasibility.binding = "solveBudget";
    result->reason = internal::budget_reason(options.budget, stopped);
  }
  return result;
}

}  // namespace depl::solver
