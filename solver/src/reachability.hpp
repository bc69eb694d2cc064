// Internal to the solver: what the loss process can reach at all, whatever it costs. Used only to
// explain infeasibility: the best probability of reaching the target within the horizon, and the
// fewest epochs any schedule needs to meet the guarantee (beyond the horizon, if need be). A
// breadth-first search over the expanded graph without placements, epochs as the distance.
#pragma once

#include <optional>

#include "search_context.hpp"

namespace depl::solver::internal {

struct Reachability {
  double best_probability = 0;  // the best state reached within the horizon
  std::optional<Plan> best_plan;
  int goal_epochs = -1;  // fewest epochs meeting the guarantee, -1 if none was found
};

// `ignore_capacity`: also use variants no pool has room for (their phases get placement
// (pool 0, min workers), so such plans are only for reasoning, never for reporting).
Reachability explore_reachability(const SearchContext& ctx, const SelectionData& data, double eta,
                                  bool ignore_capacity);

}  // namespace depl::solver::internal
