#include "plan_scorer.hpp"

#include <cmath>

namespace depl::solver::internal {

namespace {

// The plan's duration as the independent terms Chernoff's bound takes (evaluate()'s terms).
DurationTerms duration_terms(const SearchContext& ctx, const SelectionData& data, const Plan& plan,
                             double fixed_seconds) {
  const Problem& problem = *ctx.problem;
  DurationTerms terms;
  terms.fixed_seconds = fixed_seconds;
  for (const Phase& ph : plan.phases) {
    const ModelVariant& model = problem.models[ph.model];
    const Pool& pool = problem.pools[ph.pool];
    const double uninterrupted = epoch_seconds(problem, model, pool, ph.workers, data.samples);
    terms.phases.emplace_back(ph.epochs,
                              epoch_interruptions(model, pool, ph.workers, uninterrupted));
  }
  return terms;
}

}  // namespace

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
  bool interrupted = false;
  double fixed_seconds = 0;
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
    const double uninterrupted = epoch_seconds(problem, model, pool, ph.workers, data.samples);
    const EpochInterruptions interruptions =
        epoch_interruptions(model, pool, ph.workers, uninterrupted);
    interrupted = interrupted || interruptions.rate > 0;
    const double fixed = startup_s + staging_s + switch_s;
    const double seconds = fixed + ph.epochs * interruptions.expected_seconds();
    fixed_seconds += fixed;
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
  score.variance = plan.phases.empty()
                       ? state.variance
                       : reported(data.dynamics[plan.phases.back().model], state);
  // The deadline: a hard bound on the duration without interruptions; with them a chance
  // constraint that takes its share of the promise (EXP asks only the expected duration).
  double on_time = 1;
  if (problem.target.deadline_seconds) {
    const double deadline = *problem.target.deadline_seconds;
    if (interrupted && ctx.kappa > 0) {
      on_time = on_time_probability(duration_terms(ctx, data, plan, fixed_seconds), deadline);
      score.deadline = on_time > problem.target.probability;
      if (!score.deadline) on_time = 1;  // judged on the loss alone, as evaluate() does
    } else {
      score.deadline = score.seconds <= deadline;
    }
  }
  const double kappa = on_time < 1
                           ? guarantee_kappa(problem.target, problem.target.probability / on_time)
                           : ctx.kappa;
  score.guarantee = meets(kappa, problem.target.loss, score.mean, score.variance);
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
