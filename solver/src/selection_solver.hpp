// Internal to the solver: everything DepL does for one dataset selection D. It builds the
// selection's data (placement Pareto sets included), runs the expanded-graph search for the
// cheapest plan meeting the guarantee, and, when that plan misses the deadline, trades cost for
// time with the Lagrangian weight cost + lambda * seconds, lambda found by bisection.
// Results are memoised per D for the outer dataset selection.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "depl/solver/solve.hpp"
#include "plan_polish.hpp"
#include "schedule_graph.hpp"

namespace depl::solver::internal {

struct SelectionOutcome {
  std::vector<std::size_t> datasets;
  std::optional<Candidate> cheapest;  // meets the guarantee; deadline and budget ignored
  std::optional<Candidate> fastest;   // least time found (computed only when asked for)
  std::optional<Candidate> best;      // meets guarantee and deadline, cheapest found
  bool deadline_searched = false;     // best is final (not just the cheapest plan's verdict)
  bool cut = false;                   // the budget stopped a search of this selection
  // The cheapest search ignored plans costing more than this (another selection was already
  // cheaper); when `cheapest` is empty, nothing cheaper than it exists for D.
  double cost_bound = std::numeric_limits<double>::infinity();
};

class SelectionSolver {
 public:
  SelectionSolver(const SearchContext& ctx, double eta, SolveStats& stats);

  // The cheapest plan for D (one graph search), ignoring plans that cost more than `cost_bound`;
  // cached.
  SelectionOutcome& cheapest(const std::vector<std::size_t>& datasets,
                             double cost_bound = std::numeric_limits<double>::infinity());
  // The cheapest plan for D that also meets the deadline (bisection on lambda); cached.
  SelectionOutcome& with_deadline(const std::vector<std::size_t>& datasets);
  // The least-time plan for D meeting the guarantee; cached.
  SelectionOutcome& with_fastest(const std::vector<std::size_t>& datasets);

  const std::map<std::vector<std::size_t>, SelectionOutcome>& outcomes() const { return outcomes_; }
  const SelectionData& data(const std::vector<std::size_t>& datasets);

 private:
  // One graph search with the given weights: the first goal the exact arithmetic confirms.
  std::optional<Candidate> search(const SelectionData& data, const Weights& weights,
                                  double bound = std::numeric_limits<double>::infinity());
  void consider_for_deadline(const SelectionData& data, const Candidate& raw,
                             SelectionOutcome& out);

  static std::size_t selection_data_bytes(const SelectionData& data);
  void report_memory();

  const SearchContext& ctx_;
  double eta_;
  std::size_t data_bytes_ = 0;
  SolveStats& stats_;
  std::map<std::vector<std::size_t>, SelectionOutcome> outcomes_;
  std::map<std::vector<std::size_t>, std::unique_ptr<SelectionData>> data_;
  ScheduleSearch::Scratch scratch_;  // shared by this solver's searches, one at a time
};

}  // namespace depl::solver::internal
