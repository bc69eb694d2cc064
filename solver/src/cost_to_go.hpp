// Internal to the solver: admissible lower bounds on the weight and on the epochs still needed to
// reach the guarantee from a state of the expanded schedule graph. The weight bound lets the
// graph search run as A* instead of plain Dijkstra and skip the cheap-but-hopeless states (a
// compressed variant sitting on its floor); the epochs bound rejects, before any search, the
// first phases (and so the dataset selections) that cannot reach the guarantee within H.
//
// The relaxation: placements cost their cheapest, the fixed part of a switch its least, means
// are rounded down to a grid of cells, and the variance is only known to be at least a floor b.
// A state is after an epoch of its variant v, so b >= sigma_v^2; and an epoch of any variant w
// leaves rho_w^2 s + sigma_w^2 >= min(s, s*), s* the least stationary variance
// sigma_w^2 / (1 - rho_w^2), so a variance c <= s* is a floor for every later state as well.
// The last phase (no switch after it) is solved exactly from b: the fewest epochs t of v after
// which mean_t + kappa * sqrt(variance_t) <= L*, the variance moving towards v's stationary value
// as the mean falls. Any other continuation is some epochs of v, then a switch, bounded by the
// cell dynamic programme (an epoch's mean rounded down to its cell).
//
// Two tables: c = 0 (every state; weights and epochs), and c = 0.95 s* (weights only, built the
// first time a state's variance is known to be that high: most states a search settles are).
//
// Only the weight tables depend on the weights: where an epoch or a switch leads from each cell,
// the last phase's epochs and the epochs table are functions of the dynamics and the grid. A
// Memory keeps what its last CostToGo was built from, and the next one on the same inputs reuses
// those parts (a deadline's Lagrangian weights on one selection), or every table when the
// weights are the same too (the two passes of one search).
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
  // The tables' memory, which outlives one CostToGo: a solve builds the bounds for every search,
  // and allocating (and faulting in) the tables afresh each time cost more than filling them.
  // One Memory serves one CostToGo at a time.
  class Memory;

  // Means below `mean_low` get a bound of 0; [mean_low, mean_high] is split into `cells` cells.
  CostToGo(const SearchContext& ctx, const SelectionData& data, const Weights& weights,
           double mean_low, double mean_high, int cells, Memory& memory);

  // Lower bound on the weight still needed from a state after an epoch of `model` with
  // `switches` used, loss mean >= mean and loss variance >= variance (infinite: the guarantee
  // cannot be reached within H).
  double bound(std::size_t model, int switches, double mean, double variance);

  // Lower bound on the epochs still needed from such a state, whatever its variance; kNever when
  // the guarantee cannot be reached.
  static constexpr int kNever = 1 << 30;
  int epochs(std::size_t model, int switches, double mean) const;

  // bound() and epochs() of one state at once.
  struct Need {
    double weight = 0;
    int epochs = 0;
  };
  Need need(std::size_t model, int switches, double mean, double variance);

  // True once the second table (c = 0.95 s*) was needed; for tests.
  bool upper_built() const;

  // What the constructor found in the Memory, for tests: the tables that do not depend on the
  // weights (transitions, last phases, epochs), and the weight tables as well.
  enum class Reuse { None, Transitions, Everything };
  Reuse reuse() const { return reuse_; }

  // Bytes held by the tables (in the Memory, which later bounds reuse).
  std::size_t memory_bytes() const;

 private:
  struct Level {
    double variance = 0;  // c
    bool built = false;   // the weight table, for the Memory's weights
    std::vector<double> weight;
    bool last_built = false;  // `last`, for the Memory's transitions
    // The last phase's epochs per variant and cell (kNever: not within H).
    std::vector<int> last;
  };
  struct SwitchEdge {
    std::size_t to = 0;
    double jump = 0;
    double fixed = 0;  // fixed part of the switch plus the next variant's first epoch
  };

  // True when the Memory's tables were built from this object's inputs: all but the weights
  // (same_transitions), and the weights too (same_weights).
  bool same_transitions() const;
  bool same_weights() const;
  void remember_inputs();
  void build_transitions();
  void build_last(Level& level) const;
  void build_epochs() const;
  void build_weights(Level& level) const;
  // build_weights(level) after what it needs.
  void build(Level& level) const;
  int cell_below(double mean) const;
  std::size_t slot(std::size_t model, int switches, int cell) const {
    return (model * static_cast<std::size_t>(switch_levels_) + static_cast<std::size_t>(switches)) *
               static_cast<std::size_t>(cells_ + 1) +
           static_cast<std::size_t>(cell);
  }

  double low_ = 0;
  double step_ = 1;
  int cells_ = 0;
  int switch_levels_ = 1;
  std::size_t variants_ = 0;
  double target_loss_ = 0;
  double kappa_ = 0;
  std::vector<VariantDynamics> dynamics_;       // per variant
  std::vector<bool> placeable_;                 // per variant: has a placement
  std::vector<double> epoch_min_;               // cheapest epoch per variant
  std::vector<std::vector<SwitchEdge>> edges_;  // allowed switches out of each variant
  int horizon_ = 0;
  double stationary_ = 0;  // s*
  bool upper_ = false;     // the second table applies (kappa > 0, s* finite and positive)
  Reuse reuse_ = Reuse::None;
  Memory& memory_;

 public:
  class Memory {
   private:
    friend class CostToGo;
    // Where an epoch (kStays: it does not lower the mean) and each switch lead from each cell.
    std::vector<int> stay;
    std::vector<std::vector<int>> after;
    // The epochs table (c = 0 only; it does not depend on the weights).
    std::vector<int> epochs;
    // The builds' scratch: the bounds with a switch still to come, and the best continuation by
    // a switch per cell.
    std::vector<double> later;
    std::vector<int> later_epochs;
    std::vector<double> by_switch;
    std::vector<Level> levels;  // [0]: c = 0; [1]: c = 0.95 s*

    // What the tables were built from (`built` false: nothing yet).
    bool built = false;
    double low = 0, step = 0, target_loss = 0, kappa = 0;
    int cells = 0, switch_levels = 0, horizon = 0;
    std::vector<VariantDynamics> dynamics;
    std::vector<bool> placeable;
    std::vector<std::vector<SwitchEdge>> edges;
    std::vector<double> epoch_min;
  };
};

}  // namespace depl::solver::internal
