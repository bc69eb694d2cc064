#include "plan_scorer.hpp"

#include <cmath>

namespace depl::solver::internal {

Score score_plan(const SearchContext& ctx, const SelectionData& data, const Plan& plan) {
  const Problem& problem = *ctx.problem;
  const Training& tr = problem.training;
  Score score;
  if (plan.phases.empty() || plan.datasets.empty()) return score;
  bool structural = true;
  LossState state = initial_state(ctx, plan.phases.front().model);
  int previous_model = ctx.start_model;
  int previous_pool = ctx.start_pool;
  int epochs = 0;
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const Phase& ph = plan.phases[i];
    const ModelVariant& model = problem.models[ph.model];
    const Pool& pool = problem.pools[ph.pool];
    const int m = static_cast<int>(ph.model);
    double switch_s = 0;
    if (previous_model != kNone && previous_model != m) {
      ++score.switches;
      const int sw = ctx.switch_index[static_cast<std::size_t>(previous_model)][ph.model];
      if (sw == kNone) {
        structural = false;
      } else {
        const Switch& s = problem.switching[static_cast<std::size_t>(sw)];
        state.mean += s.jump_mean;
        state.variance += s.jump_stddev * s.jump_stddev;
        switch_s = s.overhead_seconds;
      }
    } else if (previous_model == m && i > 0) {
      structural = false;
    }
    const bool continues = problem.continues_start(i, ph.model, ph.pool, ph.workers);
    const double staging_s = !continues && previous_pool != static_cast<int>(ph.pool)
                                 ? data.staging_seconds[ph.pool]
                                 : 0.0;
    const double startup_s = continues ? 0.0 : pool.startup_seconds;
    const double epoch_s = epoch_seconds(problem, model, pool, ph.workers, data.samples);
    const double seconds = startup_s + staging_s + switch_s + ph.epochs * epoch_s;
    const double n = ph.workers;
    score.cost += n * model.gpus_per_worker * pool.price_per_gpu_hour * seconds / 3600.0;
    score.seconds += seconds;
    for (int e = 0; e < ph.epochs; ++e) state = step(data.dynamics[ph.model], state);
    if (static_cast<long>(ph.workers) * model.gpus_per_worker > pool.gpus) structural = false;
    if (ph.workers < tr.min_workers || ph.workers > tr.max_workers || ph.epochs < 1) {
      structural = false;
    }
    epochs += ph.epochs;
    previous_model = m;
    previous_pool = static_cast<int>(ph.pool);
  }
  if (epochs > tr.max_epochs || score.switches > tr.max_switches) structural = false;
  score.structural = structural;
  score.mean = state.mean;
  score.variance = state.variance;
  score.guarantee = meets(ctx.kappa, problem.target.loss, state.mean, state.variance);
  if (problem.target.deadline_seconds) {
    score.deadline = score.seconds <= *problem.target.deadline_seconds;
  }
  if (problem.target.budget) score.budget = score.cost <= *problem.target.budget;
  return score;
}

bool better_plan(double cost_a, double seconds_a, std::size_t phases_a, double cost_b,
                 double seconds_b, std::size_t phases_b) {
  if (std::isfinite(cost_a) != std::isfinite(cost_b)) return std::isfinite(cost_a);
  if (!std::isfinite(cost_a)) return false;
  const double cost_tol = 1e-9 * std::max(std::abs(cost_a), std::abs(cost_b));
  if (cost_a < cost_b - cost_tol) return true;
  if (cost_a > cost_b + cost_tol) return false;
  const double time_tol = 1e-9 * std::max(std::abs(seconds_a), std::abs(seconds_b));
  if (seconds_a < seconds_b - time_tol) return true;
  if (seconds_a > seconds_b + time_tol) return false;
  return phases_a < phases_b;
}

}  // namespace depl::solver::internal
