// The exact evaluator of docs/depl-model.md section 2: the one place that says what a plan
// costs, how long it takes, where its loss ends up and whether it is feasible. Every figure the
// project prints comes from here. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

struct PhaseFigures {
  double epoch_seconds = 0;    // compute + all-reduce per epoch
  double compute_seconds = 0;  // per epoch
  double comm_seconds = 0;     // per epoch
  double staging_seconds = 0;
  double switch_seconds = 0;
  double startup_seconds = 0;
  double seconds = 0;          // whole phase
  double cost = 0;             // whole phase
  double loss_mean = 0;        // at the end of the phase
  double loss_variance = 0;    // at the end of the phase
};

struct Figures {
  bool feasible = false;
  bool meets_guarantee = false;
  double cost = 0;
  double duration_seconds = 0;
  double loss_mean = 0;
  double loss_stddev = 0;
  double probability = 0;
  double kappa = 0;
  std::vector<PhaseFigures> phases;
  // One line per violated constraint, naming it ("deadline: 5400 s > 3600 s"). Empty iff feasible.
  std::vector<std::string> violations;
};

// One point of the predicted loss trajectory: after `epoch` epochs in total.
struct LossPoint {
  int epoch = 0;
  std::size_t phase = 0;
  double mean = 0;
  double variance = 0;
};

// kappa for the job's guarantee: Phi^-1(p) (Gaussian) or sqrt(p/(1-p)) (Cantelli).
double guarantee_kappa(const Target& target);
// The probability the doc reports for a final state (m, s2).
double reach_probability(const Target& target, double mean, double variance);
// True iff m + kappa*sqrt(s2) <= L* (tolerance 1e-12).
bool meets_guarantee(const Target& target, double mean, double variance);

// Loss state after one epoch of variant `model` on data with `effective_samples` (E).
struct LossState {
  double mean = 0;
  double variance = 0;
};
LossState epoch_step(const ModelVariant& model, double effective_samples, LossState state);
// Per-epoch time of `workers` workers of `model` in `pool` on `samples` (N) samples per epoch.
double epoch_seconds(const Problem& problem, const ModelVariant& model, const Pool& pool,
                     int workers, double samples);
// Staging time of the datasets in `datasets` into `pool`.
double staging_seconds(const Problem& problem, const std::vector<std::size_t>& datasets,
                       const Pool& pool);

// Samples per epoch (N) and effective samples (E) of a dataset selection.
double total_samples(const Problem& problem, const std::vector<std::size_t>& datasets);
double effective_samples(const Problem& problem, const std::vector<std::size_t>& datasets);

// Evaluates a plan exactly. Structural errors in the plan (index out of range, no phases) are
// reported as violations, never as a crash.
Figures evaluate(const Problem& problem, const Plan& plan);

// The predicted loss after every epoch of the plan (epoch 0 = the start state).
std::vector<LossPoint> loss_trajectory(const Problem& problem, const Plan& plan);

}  // namespace depl::solver
