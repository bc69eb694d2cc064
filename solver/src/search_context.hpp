// Internal to the solver: the data every search shares for one solve() call (the Problem, the
// kappa in force, the switch table, the start state) and the per-dataset-selection data derived
// from it (samples, loss dynamics per variant, staging per pool, Pareto placements per variant).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <vector>

#include "budget_meter.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/plan.hpp"
#include "depl/solver/problem.hpp"
#include "placement.hpp"

namespace depl::solver::internal {

inline constexpr int kNone = -1;

// Fixed for one solve() call. kappa is a field, not re-derived from the Problem, because EXP
// runs the same search with kappa = 0.
struct SearchContext {
  const Problem* problem = nullptr;
  double kappa = 0;
  // switch_index[from][to]: index into problem.switching, or kNone when not allowed.
  std::vector<std::vector<int>> switch_index;
  int start_model = kNone;  // variant running when re-planning (kNone: fresh start)
  int start_pool = kNone;   // pool it ran in (kNone: data must be staged)
  double start_mean = 0;
  double start_variance = 0;
  bool has_start = false;
  // Variants that have at least one feasible (pool, workers) placement.
  std::vector<bool> placeable;
  // The solve's budget; every search of the solve asks it (null: unlimited, for tests).
  BudgetMeter* meter = nullptr;

  bool out_of_budget() const { return meter != nullptr && meter->exhausted(); }
  // The same, reading the clock now: for the start of each search, so that a budget spent (or
  // a cancellation) is seen before any work, however small the solve.
  bool out_of_budget_now() const { return meter != nullptr && meter->check_now(); }
  // False when the solve's memory budget is exceeded: the caller gives up what it grows.
  bool report_memory(MemoryUse use, std::size_t bytes) const {
    return meter == nullptr || meter->set_memory(use, bytes);
  }
  // True when `more` bytes still fit the memory budget.
  bool fits(std::size_t more) const { return meter == nullptr || meter->fits(more); }
  // For the explanation after the plan's search (BudgetMeter::past_budget).
  BudgetStop past_budget() const {
    return meter == nullptr ? BudgetStop::None : meter->past_budget();
  }

  int max_switches() const { return problem->training.max_switches; }
  int horizon() const { return problem->training.max_epochs; }
};

SearchContext make_context(const Problem& problem, double kappa, BudgetMeter* meter = nullptr);

// The loss dynamics of one variant on one dataset selection (docs/depl-model.md section 2).
//
// For a single selection, rho_below == rho and an epoch is exactly the evaluator's update. The
// certificate also builds dynamics for a *class* of selections (lower_bound.hpp): then floor is
// the least floor of the class, rho the least contraction (it applies to the mean above the
// floor and to the variance) and rho_below the greatest (to a mean below the floor, which rises
// towards it), so that one epoch of the class's dynamics never ends above the epoch of any
// selection in the class. The searches rely only on that and on the update being
// non-decreasing in the mean and in the variance.
struct VariantDynamics {
  double rho = 1;
  double rho_below = 1;
  double floor = 0;
  double noise_variance = 0;
  double validation_variance = 0;  // nu_v^2: added to the state's variance where a loss is reported
};

// Everything the inner searches need about one dataset selection D.
struct SelectionData {
  std::vector<std::size_t> datasets;           // ascending
  double samples = 0;                          // N
  double effective = 0;                        // E
  double wrong_share = 0;                      // W / N
  std::vector<VariantDynamics> dynamics;       // per model
  std::vector<double> staging_seconds;         // per pool
  std::vector<std::vector<Placement>> pareto;  // per model: the time/cost Pareto placements
};

SelectionData make_selection_data(const SearchContext& ctx, std::vector<std::size_t> datasets);
// data.pareto from data.samples and data.staging_seconds.
void fill_placements(const SearchContext& ctx, SelectionData& data);

// Loss state before the first phase of a plan whose first variant is `model` (before any switch
// from the start state's variant).
LossState initial_state(const SearchContext& ctx, std::size_t model);

}  // namespace depl::solver::internal

namespace depl::solver::internal {

// One epoch of a variant: the very expressions of epoch_step(), so the numbers agree bit for bit
// (for a single selection rho_below == rho).
inline double next_mean(const VariantDynamics& d, double mean) {
  return d.floor + (mean - d.floor) * (mean < d.floor ? d.rho_below : d.rho);
}
inline LossState step(const VariantDynamics& d, LossState s) {
  s.mean = next_mean(d, s.mean);
  s.variance = d.rho * d.rho * s.variance + d.noise_variance;
  return s;
}

inline bool meets(double kappa, double target_loss, double mean, double variance) {
  return mean + kappa * std::sqrt(std::max(0.0, variance)) <= target_loss + 1e-12;
}
// The variance of the loss reported in state `s` after an epoch of the variant `d` describes.
inline double reported(const VariantDynamics& d, const LossState& s) {
  return s.variance + d.validation_variance;
}

}  // namespace depl::solver::internal
