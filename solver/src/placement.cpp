#include "placement.hpp"

#include "depl/solver/evaluator.hpp"

namespace depl::solver::internal {

std::vector<Placement> feasible_placements(const Problem& problem, std::size_t model,
                                           double samples) {
  std::vector<Placement> out;
  const ModelVariant& v = problem.models[model];
  const Training& tr = problem.training;
  for (std::size_t k = 0; k < problem.pools.size(); ++k) {
    const Pool& pool = problem.pools[k];
    for (int n = std::max(1, tr.min_workers); n <= tr.max_workers; ++n) {
      if (static_cast<long>(n) * v.gpus_per_worker > pool.gpus) break;
      Placement p;
      p.pool = k;
      p.workers = n;
      p.rate = n * v.gpus_per_worker * pool.price_per_gpu_hour / 3600.0;
      p.epoch_seconds = epoch_seconds(problem, v, pool, n, samples);
      out.push_back(p);
    }
  }
  return out;
}

namespace {

bool dominates(const Problem& problem, const Placement& p, const Placement& q,
               const std::vector<double>& staging) {
  if (p.epoch_seconds > q.epoch_seconds || p.rate > q.rate) return false;
  if (p.pool == q.pool) return true;
  return problem.pools[p.pool].startup_seconds + staging[p.pool] <=
         problem.pools[q.pool].startup_seconds;
}

}  // namespace

std::vector<Placement> pareto_placements(const Problem& problem,
                                         const std::vector<Placement>& placements,
                                         const std::vector<double>& staging_seconds) {
  std::vector<Placement> out;
  for (std::size_t i = 0; i < placements.size(); ++i) {
    bool dominated = false;
    for (std::size_t j = 0; j < placements.size() && !dominated; ++j) {
      if (i == j || !dominates(problem, placements[j], placements[i], staging_seconds)) continue;
      // Mutual domination (identical figures): keep the first.
      dominated = !dominates(problem, placements[i], placements[j], staging_seconds) || j < i;
    }
    if (!dominated) out.push_back(placements[i]);
  }
  return out;
}

}  // namespace depl::solver::internal
