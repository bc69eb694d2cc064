// Internal to the solver: model selection and switching on the expanded graph
// (docs/depl-model.md section 3, step 3). A vertex is (variant, switches used, placement, loss
// mean rounded up, loss variance rounded up); an edge is one epoch, or a listed switch plus the
// first epoch of the next phase (paying that phase's startup, staging and switch overhead at its
// placement's rate). Edge weight is cost_weight * cost + time_weight * seconds. The search is A*
// with CostToGo's bound and yields goals cheapest first.
//
// Each label carries the exact loss state of its own path; the rounded-up cells decide which
// labels are dominated (a label is dropped when a settled one in the same layer has no more
// weight and no higher cells; for the same vertex that is the usual "first one wins"), except
// that an epoch leaving the mean in its parent's cell is compared only with lower mean cells
// (its parent is behind it, not ahead). A label is a goal when its exact state meets the
// guarantee, so every goal does; callers still re-check every plan with the exact arithmetic.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "cost_to_go.hpp"
#include "dominance_frontier.hpp"
#include "dominance_index.hpp"
#include "search_context.hpp"

namespace depl::solver::internal {

struct GraphOptions {
  double eta = 0.002;
  Weights weights;
  // Horizon-exact mode: a vertex settled by a cheaper label is expanded again by a label that
  // used fewer epochs, so the horizon never hides a plan the rounding would otherwise find.
  bool fewer_epochs_reexpand = false;
  std::size_t max_labels = 4'000'000;  // memory guard; the search gives up beyond it
  // Goals weighing more than this are of no interest (another selection already does better):
  // the search stops once its lower bound exceeds it.
  double weight_bound = std::numeric_limits<double>::infinity();
  // With a finite weight_bound, a search settling more states than this stops and reports no
  // goal: a selection that close to the incumbent rarely beats it, and this caps the worst case.
  std::size_t max_settled_when_bounded = 20'000;
};

// The rounding grid of one selection: cells of the mean start at mean_base, steps of mean_step;
// variance cells start at 0 with steps of variance_step.
struct LossGrid {
  double mean_base = 0;
  double mean_top = 0;
  double mean_step = 1;
  double variance_step = 1;
  // The largest variance a plan can reach (the variance cells cover only what can still meet
  // the guarantee, often far less).
  double variance_top = 0;
};
LossGrid make_grid(const SearchContext& ctx, const SelectionData& data, double eta);

class ScheduleSearch {
 public:
  // Buffers that outlive one search (below).
  class Scratch;

  // `scratch` is the search's memory while it lives; one Scratch serves one search at a time.
  ScheduleSearch(const SearchContext& ctx, const SelectionData& data, const GraphOptions& options,
                 Scratch& scratch);

  // The next goal in order of weight (ties: less time, fewer phases), or nullopt when none is
  // left. The plan's datasets are the selection's.
  std::optional<Plan> next_goal();

  // True when some edge was cut because it would exceed the horizon H.
  bool horizon_pruned() const { return horizon_pruned_; }
  std::size_t settled() const { return settled_; }
  bool gave_up() const { return gave_up_; }
  // True when the search stopped because of weight_bound rather than running out of states.
  bool bounded() const { return bounded_; }

 private:
  struct Label {
    double weight = 0;
    double seconds = 0;
    LossState state;
    std::uint32_t parent = 0;
    std::uint16_t model = 0;
    std::uint16_t placement = 0;
    std::uint16_t switches = 0;
    std::uint16_t phases = 0;
    std::int32_t epochs = 0;
    std::int32_t mean_cell = 0;      // rounded-up loss mean
    std::int32_t variance_cell = 0;  // rounded-up loss variance
    bool phase_start = false;
    bool stalled = false;  // an epoch that left the mean in its parent's cell
  };
  struct QueueEntry {
    double priority = 0;
    double seconds = 0;
    std::uint32_t phases = 0;
    std::uint32_t label = 0;
    bool operator<(const QueueEntry& o) const {  // std::priority_queue pops the largest
      if (priority != o.priority) return priority > o.priority;
      if (seconds != o.seconds) return seconds > o.seconds;
      return phases > o.phases;
    }
  };
  static constexpr std::uint32_t kRoot = 0xFFFFFFFFu;

  std::size_t layer_of(const Label& l, int switches) const;
  bool is_goal(const Label& l) const;
  bool dominated(const Label& l) const;
  void settle(const Label& l);
  void push(Label label);
  void expand(std::uint32_t index);
  void push_phase_start(std::uint32_t parent, std::size_t model, int switches, int switch_index,
                        int previous_pool, LossState before_switch, double weight, double seconds,
                        int epochs, int phases);
  const std::vector<std::uint16_t>& candidates(std::size_t model, int switch_index,
                                               int previous_pool);
  Plan reconstruct(std::uint32_t goal) const;
  // The search's working memory with room for `labels` labels (and as many heap entries).
  std::size_t memory_bytes(std::size_t labels) const;

  const SearchContext& ctx_;
  const SelectionData& data_;
  GraphOptions options_;
  LossGrid grid_;
  CostToGo cost_to_go_;
  // In scratch_: every label pushed, and the open list as a binary heap (the std::priority_queue
  // algorithm on a reused vector).
  std::vector<Label>& labels_;
  std::vector<QueueEntry>& queue_;
  // Per layer (variant, switches used, placement): settled labels no other settled label
  // dominates. A label is dominated by one with no more weight, no higher rounded mean and
  // variance, in the same variant and placement with no more switches used (and, in the
  // horizon-exact mode, no more epochs): monotone updates mean it can do everything the other can,
  // at no more weight.
  // In the horizon-exact mode (four criteria) the layers are scanned; otherwise indexed.
  std::vector<DominanceFrontier> frontier_;
  std::vector<DominanceIndex>& index_;  // in scratch_
  std::int32_t mean_cells_ = 1;
  Scratch& scratch_;
  std::vector<std::vector<std::uint16_t>> candidate_cache_;
  std::vector<bool> candidate_ready_;
  std::size_t max_placements_ = 1;
  std::size_t settled_ = 0;
  bool horizon_pruned_ = false;
  bool gave_up_ = false;
  bool bounded_ = false;
  bool started_ = false;
};

// A solve runs many searches (per dataset selection, weight and mode). Handing the next search
// the previous one's buffers (labels, heap, dominance index, bound tables) spares it allocating
// them afresh and faulting the pages in. Not for use by two searches at once.
class ScheduleSearch::Scratch {
 public:
  // Bytes the dominance indexes keep between searches.
  std::size_t index_bytes_kept() const { return index_bytes; }
  // Gives the indexes' memory back (the next searches allocate what they use again).
  void release_index() {
    index.clear();
    index.shrink_to_fit();
    active_layers.clear();
    index_bytes = 0;
  }

 private:
  friend class ScheduleSearch;
  std::vector<Label> labels;
  std::vector<QueueEntry> heap;
  std::vector<DominanceIndex> index;
  std::vector<std::size_t> active_layers;  // entries of `index` the last search used
  std::size_t index_bytes = 0;             // what the entries of `index` hold, in all
  CostToGo::Memory bound;                  // the tables of the search's CostToGo
};

}  // namespace depl::solver::internal
