#include "search_context.hpp"

#include <algorithm>
#include <cmath>

namespace depl::solver::internal {

SearchContext make_context(const Problem& problem, double kappa, BudgetMeter* meter) {
  SearchContext ctx;
  ctx.problem = &problem;
  ctx.kappa = kappa;
  ctx.meter = meter;
  const std::size_t nv = problem.models.size();
  ctx.switch_index.assign(nv, std::vector<int>(nv, kNone));
  for (std::size_t s = 0; s < problem.switching.size(); ++s) {
    const int from = problem.model_index(problem.switching[s].from);
    const int to = problem.model_index(problem.switching[s].to);
    if (from < 0 || to < 0 || from == to) continue;
    auto& slot = ctx.switch_index[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
    if (slot == kNone) slot = static_cast<int>(s);  // find_switch returns the first listed one
  }
  if (problem.start) {
    ctx.has_start = true;
    ctx.start_model = problem.model_index(problem.start->model);
    ctx.start_pool = problem.pool_index(problem.start->pool);
    ctx.start_mean = problem.start->loss_mean;
    ctx.start_variance = problem.start->loss_variance;
  }
  ctx.placeable.assign(nv, false);
  for (std::size_t v = 0; v < nv; ++v) {
    ctx.placeable[v] = !feasible_placements(problem, v, 1.0).empty();
  }
  return ctx;
}

namespace {

// The Pareto placements. With a deadline and pools with interruptions, time on such a pool is
// riskier than its expectation says: its placements never replace steady ones (a plan may want
// those for its last epochs), so the two kinds are filtered apart.
std::vector<Placement> kept_placements(const Problem& problem, const std::vector<Placement>& all,
                                       const std::vector<double>& staging_seconds) {
  const bool interrupted = std::any_of(problem.pools.begin(), problem.pools.end(),
                                       [](const Pool& p) { return p.interruptions_per_hour > 0; });
  if (!problem.target.deadline_seconds || !interrupted) {
    return pareto_placements(problem, all, staging_seconds);
  }
  std::vector<Placement> steady, risky;
  for (const Placement& p : all) {
    (problem.pools[p.pool].interruptions_per_hour > 0 ? risky : steady).push_back(p);
  }
  std::vector<Placement> kept = pareto_placements(problem, steady, staging_seconds);
  for (Placement& p : pareto_placements(problem, risky, staging_seconds)) kept.push_back(p);
  return kept;
}

}  // namespace

SelectionData make_selection_data(const SearchContext& ctx, std::vector<std::size_t> datasets) {
  const Problem& problem = *ctx.problem;
  SelectionData data;
  data.datasets = std::move(datasets);
  data.samples = total_samples(problem, data.datasets);
  data.effective = effective_samples(problem, data.datasets);
  data.wrong_share = wrong_label_share(problem, data.datasets);
  data.dynamics.resize(problem.models.size());
  for (std::size_t v = 0; v < problem.models.size(); ++v) {
    const LossProfile& lp = problem.models[v].loss;
    // The same expressions as epoch_step(), so searches track the evaluator's numbers exactly.
    VariantDynamics& d = data.dynamics[v];
    d.rho = std::pow(lp.decay_per_epoch, data.effective / lp.reference_samples);
    d.rho_below = d.rho;
    d.floor = loss_floor(lp, data.effective, data.wrong_share);
    d.noise_variance = lp.noise_stddev * lp.noise_stddev;
    d.validation_variance = lp.validation_noise_stddev * lp.validation_noise_stddev;
  }
  data.staging_seconds.resize(problem.pools.size());
  for (std::size_t k = 0; k < problem.pools.size(); ++k) {
    data.staging_seconds[k] = staging_seconds(problem, data.datasets, problem.pools[k]);
  }
  fill_placements(ctx, data);
  return data;
}

void fill_placements(const SearchContext& ctx, SelectionData& data) {
  const Problem& problem = *ctx.problem;
  data.pareto.clear();
  data.pareto.resize(problem.models.size());
  for (std::size_t v = 0; v < problem.models.size(); ++v) {
    const std::vector<Placement> all = feasible_placements(problem, v, data.samples);
    data.pareto[v] = kept_placements(problem, all, data.staging_seconds);
    // Continuing the running phase costs no startup: that placement is always a candidate.
    for (const Placement& p : all) {
      if (!problem.continues_start(0, v, p.pool, p.workers)) continue;
      bool kept = false;
      for (const Placement& q : data.pareto[v]) kept = kept || (q.pool == p.pool && q.workers == p.workers);
      if (!kept) data.pareto[v].push_back(p);
    }
  }
}

LossState initial_state(const SearchContext& ctx, std::size_t model) {
  if (ctx.has_start) return {ctx.start_mean, ctx.start_variance};
  return initial_loss_state(ctx.problem->models[model].loss);
}

}  // namespace depl::solver::internal
