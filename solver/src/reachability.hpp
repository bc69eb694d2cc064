// Internal to the solver: what the loss process can reach at all, whatever it costs. Used only to
// explain infeasibility: the best probability of reaching the target within the horizon, and the
// fewest epochs any schedule needs to meet the guarantee (beyond the horizon, if need be). A
// breadth-first search over the expanded graph without placements, epochs as the distance.
//
// It runs after the plan's search has found nothing, within what the solve's budget has left:
// it stops when the time is spent or the solve is cancelled, before its memory would take the
// solve past the memory budget, and at its own effort cap; `cut` says which, and what it found by
// then still holds (a probability reached, the epochs of a schedule found). Beyond the horizon
// it follows only the states from which the guarantee can still be met (a bound on the least
// mean and variance every later epoch can have), so an unreachable target ends at the horizon.
#pragma once

#include <optional>

#include "search_context.hpp"

namespace depl::solver::internal {

// Why an exploration stopped before it had settled both answers.
enum class ReachabilityCut {
  None,       // it ran to the end: goal_epochs is the fewest (or -1: no number of epochs will do)
  Time,       // the solve's time budget was spent
  Cancelled,  // the solve was cancelled
  Memory,     // going on would have taken the solve past its memory budget
  Effort,     // its cap on labels
};

struct Reachability {
  double best_probability = 0;  // the best state reached within the horizon
  std::optional<Plan> best_plan;
  int goal_epochs = -1;  // fewest epochs meeting the guarantee, -1 if none was found
  ReachabilityCut cut = ReachabilityCut::None;
  // The epochs it looked to (a multiple of the horizon, or the caller's cap) and, when no goal
  // was found, whether the guarantee might still be met past them (states left open there).
  int limit = 0;
  bool open_past_limit = false;
  // Whether every state within the horizon was explored (else best_probability is only the
  // best found).
  bool horizon_done = false;
};

// `ignore_capacity`: also use variants no pool has room for (their phases get placement
// (pool 0, min workers), so such plans are only for reasoning, never for reporting).
// `max_epochs` (when >= 0): look no further (a goal with that many epochs is known already).
Reachability explore_reachability(const SearchContext& ctx, const SelectionData& data, double eta,
                                  bool ignore_capacity, int max_epochs = -1);

}  // namespace depl::solver::internal
