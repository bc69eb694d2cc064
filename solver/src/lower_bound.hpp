// Internal to the solver: the certificate, a lower bound on the cost of every plan that meets
// the guarantee and the deadline (over every dataset selection, variant sequence, switch,
// epoch split and placement the model admits), so that a plan's cost can be reported with the
// gap to the optimum it is known to be within.
//
// Three relaxations, each of which can only lower the optimum:
// - Selections are covered by classes (SelectionClass): the datasets forced in and out, and a
//   range [e_low, e_high] of effective samples E (a free dataset that takes E above e_high, or
//   without which E cannot reach e_low, is decided out, resp. in). A class's data take, for
//   every quantity, the most favourable value any selection in it can have: the samples per
//   epoch N and the staging time into each pool from a fractional knapsack (the least N, resp.
//   staging, reaching E >= e_low), the loss dynamics of the best E (VariantDynamics: least floor and contraction, and
//   the greatest contraction below the floor). A branch and bound splits the classes whose
//   bound is below the target (the E range first, then the dataset the knapsack took a fraction
//   of) until every class is proved or the effort cap is reached.
// - A phase after the first pays its cheapest placement's startup and no staging (it might
//   stay in the pool of the phase before), except on a class of one selection, where the search
//   knows the pool each phase ends in and charges the staging into another (later_staging).
// - With a deadline, the bound is Lagrangian: for any lambda >= 0, the least cost + lambda *
//   seconds minus lambda * T is at most the least cost of a plan within T; lambda is searched
//   per class.
// Within a class the search is exact: an A* over phase starts, each with the exact loss state
// of its history, where expanding a phase tries every length (the cheapest placement for that
// length: the lower envelope of the placements' cost lines), the goal test is the evaluator's,
// and CostToGo is the heuristic.
//
// What the bound relies on, so that another per-epoch update can replace the evaluator's: the
// update (and a switch's) is non-decreasing in the loss mean and variance, the guarantee test is
// monotone in both, a class's update (search_context.hpp, VariantDynamics) never ends above
// the update of any selection in it, and the epoch time is non-decreasing in N.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "cost_to_go.hpp"
#include "depl/solver/plan.hpp"
#include "search_context.hpp"

namespace depl::solver::internal {

// A set of dataset selections: those containing every dataset of `in`, none of `out`, with
// effective samples in [e_low, e_high].
struct SelectionClass {
  std::vector<bool> in;
  std::vector<bool> out;
  double e_low = 0;
  double e_high = 0;
};

// The most favourable data of any selection in the class; `fraction` is set to the dataset the
// samples knapsack took only part of (kNone when it took whole datasets), the branching choice.
SelectionData make_class_data(const SearchContext& ctx, const SelectionClass& cls,
                              int* fraction = nullptr);

struct BoundSearchOptions {
  Weights weights;
  // Stop once the bound reaches this (the bound is then reported as at least it).
  double cutoff = std::numeric_limits<double>::infinity();
  double eta = 0.002;  // the heuristic's grid
  int cells = 256;     // cells of the heuristic's tables (CostToGo)
  std::size_t max_nodes = 200'000;
  // Effort: epochs stepped through (expansions and last phases), at most.
  std::size_t max_work = std::numeric_limits<std::size_t>::max();
  // With a deadline the search keeps, for each phase length, every placement that is neither
  // dearer nor slower than another (not only the cheapest), drops paths that cannot end within
  // it and bounds the weight of those that can: exact for the constrained problem, where the
  // Lagrangian weight is not. `time_heuristic`: CostToGo for seconds (weights {0, 1}) on the
  // same data.
  std::optional<double> deadline;
  CostToGo* time_heuristic = nullptr;
  // A phase after the first pays its staging when its pool differs from the phase before's
  // (the search branches on the pools a phase ends in where that can pay); off, it never does,
  // a weaker bound that a search reaches with fewer nodes.
  bool later_staging = false;
};

struct BoundSearchResult {
  double bound = 0;       // on cost_weight * cost + time_weight * seconds
  bool complete = false;  // false: stopped by budget or max_nodes (the bound still holds)
  // The cheapest goal reached (the minimiser when the search ran to it): its seconds, or a
  // negative value when the search stopped before reaching any goal.
  double goal_seconds = -1;
  // That goal's path as a plan on the class's data (datasets: the class's `in`); for an exact
  // class a real plan, only its later phases' staging not counted.
  std::optional<Plan> plan;
  std::size_t nodes = 0;
  std::size_t work = 0;  // epochs stepped through
};

// The search's heuristic: CostToGo's tables for some data and weights. Tables built for a class
// are admissible for every class it contains (its data are at least as favourable), so a class
// split in two can keep its parent's.
struct Heuristic {
  Heuristic(const SearchContext& ctx, const SelectionData& data, const Weights& weights, double eta,
            int cells);
  CostToGo::Memory memory;
  std::unique_ptr<CostToGo> table;
};

// The least weight of a plan on the class's data (or any relaxation of it the search makes).
// `heuristic` must have been built for these data and weights, or for a class containing them.
BoundSearchResult bound_search(const SearchContext& ctx, const SelectionData& data,
                               const BoundSearchOptions& options, CostToGo& heuristic);

// The cheapest plan on one selection that costs less than `cutoff`, by the search above on the
// selection's own data: exact (no rounding of the loss state), with the deadline when the
// problem has one; only a later phase's staging is not counted, so callers score the plan.
// nullopt when the search finds none within its effort.
std::optional<Plan> exact_schedule(const SearchContext& ctx, const SelectionData& data,
                                   double cutoff, double eta);

struct LowerBound {
  double cost = 0;
  bool complete = false;
  std::size_t classes = 0;   // classes searched
  std::size_t searches = 0;  // bound searches run
  std::size_t work = 0;      // epochs stepped through
  // The cheapest plan the exact evaluator accepts among the searches' minimisers on classes of
  // one selection, if any (it may beat the plan being certified).
  std::optional<Plan> plan;
};

// The bound on the least cost of a plan meeting the guarantee (and the deadline, if any) over
// every selection (or all datasets, for a re-plan with fixed datasets). Work stops once the
// bound reaches `target` (the reported bound is then min(target, the bound)).
// `lambda_hint`: the deadline multiplier the plan's search ended with, if any. With `gap`, a
// plan the searches find (LowerBound::plan) that costs less than target / (1 - gap) lowers the
// target to its cost times (1 - gap): the bound need only certify the cheaper plan.
LowerBound certify_lower_bound(const SearchContext& ctx, double target, double eta,
                               std::optional<double> lambda_hint,
                               std::optional<double> gap = std::nullopt);

}  // namespace depl::solver::internal
