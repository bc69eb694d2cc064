// Internal to the solver: resource allocation, the paper's VNF-placement analogue. Pools are the
// servers, a variant is the VNF; a placement is (pool, workers). Per variant and dataset
// selection we keep only placements that some phase could prefer (a sound Pareto filter).
#pragma once

#include <cstddef>
#include <vector>

#include "depl/solver/problem.hpp"

namespace depl::solver::internal {

// One feasible way to run a variant: `workers` workers in `pool`.
struct Placement {
  std::size_t pool = 0;
  int workers = 1;
  double rate = 0;           // currency per second while the phase runs: n * g_v * pi_k / 3600
  // Compute + all-reduce for one epoch on the selection's samples; on a pool with interruptions
  // its expectation, rework and restarts included.
  double epoch_seconds = 0;
  double epoch_cost() const { return rate * epoch_seconds; }
};

// Every (pool, workers) with min <= workers <= max and workers * g_v <= G_k.
std::vector<Placement> feasible_placements(const Problem& problem, std::size_t model,
                                           double samples);

// Drops placements no phase can prefer. q is dropped when some p has epoch time, rate (hence
// epoch cost and the cost of every fixed second) no larger, and a fixed part no longer whatever
// the previous pool was: same pool, or p's startup + staging <= q's startup alone.
// `staging_seconds` is indexed by pool.
std::vector<Placement> pareto_placements(const Problem& problem,
                                         const std::vector<Placement>& placements,
                                         const std::vector<double>& staging_seconds);

}  // namespace depl::solver::internal
