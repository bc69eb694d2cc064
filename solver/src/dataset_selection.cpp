#include "dataset_selection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace depl::solver::internal {
namespace {

// What D is worth to the outer loop: the best deadline-feasible cost, then (for selections with
// none) the cheapest guarantee-meeting cost, so the search can still move towards feasibility.
struct Worth {
  bool feasible = false;
  double cost = std::numeric_limits<double>::infinity();
  double seconds = std::numeric_limits<double>::infinity();
  std::size_t phases = 0;
  bool operator<(const Worth& o) const {
    if (feasible != o.feasible) return feasible;
    return better_plan(cost, seconds, phases, o.cost, o.seconds, o.phases);
  }
};

Worth worth_of(const SelectionOutcome& out) {
  if (out.best) {
    return {true, out.best->score.cost, out.best->score.seconds, out.best->plan.phases.size()};
  }
  if (out.cheapest) {
    return {false, out.cheapest->score.cost, out.cheapest->score.seconds,
            out.cheapest->plan.phases.size()};
  }
  return {};
}

std::vector<std::size_t> sorted(std::vector<std::size_t> d) {
  std::sort(d.begin(), d.end());
  return d;
}

// Datasets by effectiveness: the least label noise (wrong labels raise the floor, which no
// training makes up for), then quality, then locality (local data skips staging), then size.
std::vector<std::size_t> by_effectiveness(const Problem& problem) {
  std::vector<std::size_t> order(problem.datasets.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Dataset& x = problem.datasets[a];
    const Dataset& y = problem.datasets[b];
    if (x.label_noise != y.label_noise) return x.label_noise < y.label_noise;
    if (x.quality != y.quality) return x.quality > y.quality;
    if (x.locality.size() != y.locality.size()) return x.locality.size() > y.locality.size();
    return x.samples > y.samples;
  });
  return order;
}

// Evaluates D given the best plan so far: a selection whose cheapest plan (deadline ignored)
// cannot beat `incumbent` is not searched further. Returns D's best deadline-feasible plan.
class SelectionEvaluator {
 public:
  SelectionEvaluator(const SearchContext& ctx, SelectionSolver& solver)
      : deadline_(ctx.problem->target.deadline_seconds.has_value()), solver_(solver) {}

  Worth evaluate(const std::vector<std::size_t>& d) {
    const double bound = best_ ? best_->score.cost : std::numeric_limits<double>::infinity();
    SelectionOutcome* out = &solver_.cheapest(d, bound);
    if (deadline_ && out->cheapest) out = &solver_.with_deadline(d);
    if (out->best && (!best_ || better(*out->best, *best_))) best_ = out->best;
    return worth_of(*out);
  }

  const std::optional<Candidate>& best() const { return best_; }

 private:
  bool deadline_;
  SelectionSolver& solver_;
  std::optional<Candidate> best_;
};

std::optional<Candidate> exhaustive(const SearchContext& ctx, SelectionSolver& solver) {
  const std::size_t n = ctx.problem->datasets.size();
  SelectionEvaluator evaluator(ctx, solver);
  // Promising selections first (all data, then prefixes by effectiveness) so that the bound
  // prunes the rest early.
  const auto order = by_effectiveness(*ctx.problem);
  std::vector<std::size_t> prefix;
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  evaluator.evaluate(all);
  for (std::size_t k = 0; k + 1 < n; ++k) {
    prefix.push_back(order[k]);
    evaluator.evaluate(sorted(prefix));
  }
  for (std::size_t mask = 1; mask < (std::size_t{1} << n) && !ctx.out_of_budget(); ++mask) {
    std::vector<std::size_t> d;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask & (std::size_t{1} << i)) d.push_back(i);
    }
    evaluator.evaluate(d);
  }
  return evaluator.best();
}

std::optional<Candidate> greedy(const SearchContext& ctx, SelectionSolver& solver) {
  const std::size_t n = ctx.problem->datasets.size();
  const auto order = by_effectiveness(*ctx.problem);
  SelectionEvaluator evaluator(ctx, solver);

  // All data first: it gives the bound that keeps the small prefixes' searches short.
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  std::vector<std::size_t> best_set = all;
  Worth best_worth = evaluator.evaluate(all);
  // Greedy: add datasets in order of effectiveness, keep the best prefix.
  std::vector<std::size_t> current;
  for (std::size_t k = 0; k < n && !ctx.out_of_budget(); ++k) {
    current.push_back(order[k]);
    const auto d = sorted(current);
    const Worth w = evaluator.evaluate(d);
    if (w < best_worth) {
      best_worth = w;
      best_set = d;
    }
  }
  // Local search: first improving add, drop or swap, until none improves.
  for (int round = 0; round < 4 * static_cast<int>(n) && !ctx.out_of_budget(); ++round) {
    std::vector<bool> in(n, false);
    for (std::size_t i : best_set) in[i] = true;
    std::vector<std::vector<std::size_t>> moves;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<std::size_t> d = best_set;
      if (in[i]) {
        if (d.size() == 1) continue;
        d.erase(std::find(d.begin(), d.end(), i));
      } else {
        d.push_back(i);
      }
      moves.push_back(sorted(d));
    }
    // Swaps: each selected dataset against the most effective one left out.
    std::size_t first_out = n;
    for (std::size_t k = 0; k < n && first_out == n; ++k) {
      if (!in[order[k]]) first_out = order[k];
    }
    if (first_out < n) {
      for (std::size_t out_i : best_set) {
        std::vector<std::size_t> d = best_set;
        *std::find(d.begin(), d.end(), out_i) = first_out;
        moves.push_back(sorted(d));
      }
    }
    bool improved = false;
    for (const auto& d : moves) {
      if (ctx.out_of_budget()) break;
      const Worth w = evaluator.evaluate(d);
      if (w < best_worth) {
        best_worth = w;
        best_set = d;
        improved = true;
        break;
      }
    }
    if (!improved) break;
  }
  return evaluator.best();
}

}  // namespace

std::optional<Candidate> select_datasets(const SearchContext& ctx, SelectionSolver& solver) {
  if (ctx.problem->fixed_datasets) {
    // A re-plan keeps the data the job already trains on: only the full selection is a choice.
    std::vector<std::size_t> all(ctx.problem->datasets.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    SelectionEvaluator evaluator(ctx, solver);
    evaluator.evaluate(all);
    return evaluator.best();
  }
  if (ctx.problem->datasets.size() <= kExhaustiveDatasets) return exhaustive(ctx, solver);
  return greedy(ctx, solver);
}

}  // namespace depl::solver::internal
