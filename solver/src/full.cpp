// FULL (docs/depl-model.md section 4): one phase of the full variant (largest
// computePerSampleGflop) on all datasets, the fewest epochs that meet the guarantee, and the
// cheapest placement for them (meeting the deadline when there is one). Dependable but naive.
#include <fmt/format.h>

#include <limits>

#include "algorithms.hpp"
#include "explain.hpp"

namespace depl::solver::internal {

SolveResult solve_full(const Problem& problem, const SolveOptions& options, BudgetMeter& meter) {
  SolveResult result;
  result.algorithm = Algorithm::Full;
  const SearchContext ctx = make_context(problem, guarantee_kappa(problem.target), &meter);
  std::size_t full = 0;
  for (std::size_t v = 1; v < problem.models.size(); ++v) {
    if (problem.models[v].compute_per_sample_gflop >
        problem.models[full].compute_per_sample_gflop) {
      full = v;
    }
  }
  std::vector<std::size_t> all(problem.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const SelectionData data = make_selection_data(ctx, all);
  result.stats.dataset_sets = 1;
  const std::vector<Placement> placements = feasible_placements(problem, full, data.samples);
  result.stats.placements = placements.size();
  const std::string& name = problem.models[full].name;

  LossState state = initial_state(ctx, full);
  int tau_switch = kNone;
  if (ctx.start_model != kNone && ctx.start_model != static_cast<int>(full)) {
    tau_switch = ctx.switch_index[static_cast<std::size_t>(ctx.start_model)][full];
    if (tau_switch == kNone || ctx.max_switches() < 1) {
      result.infeasibility.binding = "guarantee";
      result.reason =
          fmt::format("FULL trains only {}, but switching from {} to it is not allowed.", name,
                      problem.start->model);
      return result;
    }
    const Switch& s = problem.switching[static_cast<std::size_t>(tau_switch)];
    state.mean += s.jump_mean;
    state.variance += s.jump_stddev * s.jump_stddev;
  }
  if (placements.empty()) {
    result.infeasibility.binding = "capacity";
    result.reason = fmt::format("FULL trains only {}, and no pool has room for it.", name);
    return result;
  }
  // Fewest epochs meeting the guarantee; past the horizon only to tell "horizon" from "guarantee".
  const int horizon = ctx.horizon();
  int epochs = 0;
  int best_epochs = 1;
  double best_probability = -1;
  for (int e = 1; e <= 50 * std::max(horizon, 1); ++e) {
    state = step(data.dynamics[full], state);
    const double variance = reported(data.dynamics[full], state);
    const double p = reach_probability(problem.target, state.mean, variance);
    if (e <= horizon && p > best_probability) {
      best_probability = p;
      best_epochs = e;
    }
    if (meets(ctx.kappa, problem.target.loss, state.mean, variance)) {
      epochs = e;
      break;
    }
  }
  Plan plan{all, {{full, epochs, 0, 1}}};
  auto with_placement = [&](const Placement& p, int e) {
    Plan out{all, {{full, e, p.pool, p.workers}}};
    return Candidate{out, score_plan(ctx, data, out)};
  };
  if (epochs == 0 || epochs > horizon) {
    result.plan = with_placement(placements.front(), best_epochs).plan;
    result.figures = evaluate(problem, result.plan);
    result.infeasibility.best_probability = result.figures.probability;
    result.infeasibility.binding = epochs > horizon ? "horizon" : "guarantee";
    result.reason =
        epochs > horizon
            ? fmt::format(
                  "FULL needs {} epochs of {} to meet the guarantee, more than maxEpochs {}.",
                  epochs, name, horizon)
            : fmt::format(
                  "{} alone on all datasets never reaches loss {:.4g} with probability "
                  "{} (best P = {}).",
                  name, problem.target.loss, problem.target.probability,
                  probability_text(result.figures.probability));
    return result;
  }
  std::optional<Candidate> cheapest, fastest, best;
  for (const Placement& p : placements) {
    Candidate c = with_placement(p, epochs);
    ++result.stats.plans_checked;
    if (!c.score.structural) continue;
    if (!cheapest || better(c, *cheapest)) cheapest = c;
    if (!fastest || c.score.seconds < fastest->score.seconds) fastest = c;
    if (c.score.deadline && (!best || better(c, *best))) best = c;
  }
  if (best && best->score.budget) {
    result.plan = best->plan;
    result.figures = evaluate(problem, result.plan);
    result.feasible = result.figures.feasible;
    if (result.feasible) return result;
  }
  SearchFindings findings;
  findings.cheapest = cheapest;
  findings.fastest = fastest;
  findings.deadline_best = best;
  explain_infeasible(ctx, findings, options.eta, result);
  (void)plan;
  return result;
}

}  // namespace depl::solver::internal
