// Internal to the solver: an admissible, consistent lower bound on the weight still needed to
// reach the guarantee from a state of the expanded schedule graph, so the graph search can run
// as A* instead of plain Dijkstra and skip the cheap-but-hopeless states (a compressed variant
// sitting on its floor). It relaxes the problem to the loss mean alone: the final variance is at
// least the last variant's noise, placements cost their cheapest, and means are rounded down.
#pragma once

#include <vector>

#include "search_context.hpp"

namespace depl::solver::internal {

// Edge weight of the graph: cost_weight * cost + time_weight * seconds.
struct Weights {
  double cost_weight = 1;
  double time_weight = 0;
  double of(double rate, double seconds) const {
    return (cost_weight * rate + time_weight) * seconds;
  }
};

class CostToGo {
 public:
  // Means below `mean_low` get a bound of 0; [mean_low, mean_high] is split into `cells` cells.
  CostToGo(const SearchContext& ctx, const SelectionData& data, const Weights& weights,
           double mean_low, double mean_high, int cells);

  // Lower bound for a state after an epoch of `model` with `switches` used and loss mean >= mean.
  double bound(std::size_t model, int switches, double mean) const;

 private:
  int cell_below(double mean) const;
  double& at(std::size_t model, int switches, int cell) {
    return table_[(model * static_cast<std::size_t>(switch_levels_) +
                   static_cast<std::size_t>(switches)) *
                      static_cast<std::size_t>(cells_ + 1) +
                  static_cast<std::size_t>(cell)];
  }
  double at(std::size_t model, int switches, int cell) const {
    return table_[(model * static_cast<std::size_t>(switch_levels_) +
                   static_cast<std::size_t>(switches)) *
                      static_cast<std::size_t>(cells_ + 1) +
                  static_cast<std::size_t>(cell)];
  }

  double low_ = 0;
  double step_ = 1;
  int cells_ = 0;
  int switch_levels_ = 1;
  std::vector<double> table_;
};

}  // namespace depl::solver::internal
