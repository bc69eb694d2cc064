// Monte Carlo simulation of a plan (docs/depl-model.md section 5): draws independent runs of
// the loss process and, on spot pools, of the interruptions (their time and cost), and reports
// how often the target was reached (by the deadline), with a Wilson 95% interval. Seeded and
// deterministic for a given seed.
#pragma once

#include <cstdint>

#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"

namespace depl::solver {

enum class Noise { Gaussian, StudentT3 };

struct SimulationOptions {
  int runs = 10'000;
  std::uint64_t seed = 1;
  Noise noise = Noise::Gaussian;
};

struct SimulationResult {
  int runs = 0;
  // Runs whose final loss <= L* and, for a plan with interruptions and a deadline, whose
  // duration <= T_max.
  int reached = 0;
  double probability = 0;      // reached / runs
  // Runs whose loss after some epoch <= L* (that epoch done by the deadline, for a plan with
  // interruptions and a deadline): what the operator counts, as it stops at the first such
  // epoch (docs/depl-model.md section 2, "What is promised"). At least `reached`.
  int reached_stopping_at_target = 0;
  double probability_stopping_at_target = 0;
  double interval_low = 0;     // Wilson 95% interval
  double interval_high = 0;
  double standard_error = 0;   // sqrt(p (1-p) / runs)
  double mean_final_loss = 0;
  double predicted_probability = 0;  // the evaluator's figure for the same plan
  // Time and cost: drawn when some phase is interrupted, else the evaluator's (deterministic).
  int on_time = 0;  // runs done by the deadline (all of them without one)
  double mean_seconds = 0;
  double mean_cost = 0;
  double cost_standard_error = 0;  // of mean_cost
  double cost_stddev = 0;          // of one run's cost
  double mean_interruptions = 0;
  double predicted_cost = 0;  // the evaluator's expected cost
};

SimulationResult simulate(const Problem& problem, const Plan& plan,
                          const SimulationOptions& options = {});

// Wilson score interval for `successes` out of `trials` at 95% (z = 1.96).
struct Interval {
  double low = 0;
  double high = 0;
};
Interval wilson_interval(int successes, int trials);

}  // namespace depl::solver
