#include "placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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
      // On spot pools the expected epoch, rework and restarts included (docs/depl-model.md
      // section 2): the graph's cost is then the plan's expected cost, and its time the
      // expected duration, a relaxation of the deadline's chance constraint.
      const double uninterrupted = epoch_seconds(problem, v, pool, n, samples);
      p.epoch_seconds = epoch_interruptions(v, pool, n, uninterrupted).expected_seconds();
      if (!std::isfinite(p.epoch_seconds)) continue;  // interrupted too often to finish an epoch
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
  // q is dropped when some p dominates it and q does not dominate p back, or does but comes
  // later (identical figures: keep the first). A sweep by rate: p of a lower rate dominates q
  // when some pool whose fixed part (startup + staging) is at most q's startup, or q's own pool,
  // already holds an epoch time at most q's; placements of equal rate are compared pairwise.
  const std::size_t n = placements.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (placements[a].rate != placements[b].rate) return placements[a].rate < placements[b].rate;
    return a < b;
  });
  const std::size_t pools = problem.pools.size();
  std::vector<double> fixed(pools);
  for (std::size_t k = 0; k < pools; ++k) {
    fixed[k] = problem.pools[k].startup_seconds + staging_seconds[k];
  }
  constexpr double kNoEpoch = std::numeric_limits<double>::infinity();
  std::vector<double> best_epoch(pools, kNoEpoch);  // least epoch time at a lower rate, per pool
  std::vector<bool> dropped(n, false);
  for (std::size_t g = 0; g < n;) {
    std::size_t end = g;
    while (end < n && placements[order[end]].rate == placements[order[g]].rate) ++end;
    for (std::size_t a = g; a < end; ++a) {
      const Placement& q = placements[order[a]];
      const double startup = problem.pools[q.pool].startup_seconds;
      bool gone = best_epoch[q.pool] <= q.epoch_seconds;
      for (std::size_t k = 0; k < pools && !gone; ++k) {
        gone = fixed[k] <= startup && best_epoch[k] <= q.epoch_seconds;
      }
      for (std::size_t b = g; b < end && !gone; ++b) {
        if (a == b) continue;
        const std::size_t i = order[a], j = order[b];
        if (!dominates(problem, placements[j], placements[i], staging_seconds)) continue;
        gone = !dominates(problem, placements[i], placements[j], staging_seconds) || j < i;
      }
      dropped[order[a]] = gone;
    }
    for (std::size_t a = g; a < end; ++a) {
      const Placement& q = placements[order[a]];
      best_epoch[q.pool] = std::min(best_epoch[q.pool], q.epoch_seconds);
    }
    g = end;
  }
  std::vector<Placement> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (!dropped[i]) out.push_back(placements[i]);
  }
  return out;
}

}  // namespace depl::solver::internal
