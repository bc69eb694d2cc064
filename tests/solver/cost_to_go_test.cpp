// CostToGo's bounds against an exhaustive search: on 60 seeded instances, from every state a plan
// can reach (every dataset selection, variant sequence, phase length and Pareto placement within
// H), the weight bound is at most the least cost still needed to meet the guarantee and the
// epochs bound at most the fewest epochs still needed, so a first phase the search rejects (more
// than H epochs in all) has no plan at all. Plus: the variance-aware table is used and tighter,
// tables reused from a Memory are those a fresh one gives, and a selection whose every first phase
// is rejected settles nothing.
#include "../../solver/src/cost_to_go.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../../solver/src/schedule_graph.hpp"
#include "depl/solver/evaluator.hpp"
#include "depl/solver/testing/instance_families.hpp"

namespace depl::solver::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The least cost and fewest epochs still needed from a state, found by trying every
// continuation; checks both bounds at every state on the way.
class Exhaustive {
 public:
  Exhaustive(const SearchContext& ctx, const SelectionData& data, CostToGo& bound)
      : ctx_(ctx), data_(data), bound_(bound) {}

  struct Need {
    double cost = kInf;
    int epochs = CostToGo::kNever;
  };

  // State after an epoch of `model` at placement `placement`, `epochs` epochs used in all.
  Need from(std::size_t model, std::size_t placement, int switches, LossState state, int epochs) {
    ++states_;
    Need need;
    if (meets(ctx_.kappa, ctx_.problem->target.loss, state.mean, state.variance)) need = {0, 0};
    if (epochs < ctx_.horizon()) {
      const Placement& p = data_.pareto[model][placement];
      const Need stay =
          from(model, placement, switches, step(data_.dynamics[model], state), epochs + 1);
      need = better(need, stay, p.rate * p.epoch_seconds);
      if (switches < ctx_.max_switches()) {
        for (std::size_t w = 0; w < data_.pareto.size(); ++w) {
          const int sw = ctx_.switch_index[model][w];
          if (sw == kNone) continue;
          const Switch& s = ctx_.problem->switching[static_cast<std::size_t>(sw)];
          LossState jumped{state.mean + s.jump_mean,
                           state.variance + s.jump_stddev * s.jump_stddev};
          const LossState next = step(data_.dynamics[w], jumped);
          for (std::size_t q = 0; q < data_.pareto[w].size(); ++q) {
            const Placement& pw = data_.pareto[w][q];
            const double fixed = ctx_.problem->pools[pw.pool].startup_seconds +
                                 (pw.pool != p.pool ? data_.staging_seconds[pw.pool] : 0.0) +
                                 s.overhead_seconds;
            const Need after = from(w, q, switches + 1, next, epochs + 1);
            need = better(need, after, pw.rate * (fixed + pw.epoch_seconds));
          }
        }
      }
    }
    const double h = bound_.bound(model, switches, state.mean, state.variance);
    const int k = bound_.epochs(model, switches, state.mean);
    if (std::isfinite(need.cost)) {
      EXPECT_LE(h, need.cost * (1 + 1e-9) + 1e-12)
          << "variant " << model << " switches " << switches << " mean " << state.mean
          << " variance " << state.variance << " epochs " << epochs;
      EXPECT_LE(k, need.epochs) << "variant " << model << " mean " << state.mean;
      ++checked_;
    }
    return need;
  }

  std::size_t states() const { return states_; }
  std::size_t checked() const { return checked_; }

 private:
  static Need better(Need a, Need b, double edge) {
    if (!std::isfinite(b.cost)) return a;
    return {std::min(a.cost, b.cost + edge), std::min(a.epochs, b.epochs + 1)};
  }

  const SearchContext& ctx_;
  const SelectionData& data_;
  CostToGo& bound_;
  std::size_t states_ = 0;
  std::size_t checked_ = 0;
};

std::vector<std::vector<std::size_t>> every_selection(std::size_t n) {
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t mask = 1; mask < (std::size_t{1} << n); ++mask) {
    std::vector<std::size_t> d;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask & (std::size_t{1} << i)) d.push_back(i);
    }
    out.push_back(d);
  }
  return out;
}

// Seeds 1-40: small instances, every other one with a shorter horizon (some selections cannot
// make it), the others with a longer one and one switch. Seeds 41-60: two variants of the large
// family, whose variance takes tens of epochs to approach s*, within 40 to 80 epochs.
Problem instance(std::uint64_t seed) {
  if (seed > 40) {
    Problem p = testing::large_instance(seed, 2, 2, 2, 40 + static_cast<int>(seed % 5) * 10);
    p.training.max_switches = 1;
    p.training.max_workers = 1;
    return p;
  }
  Problem p = testing::small_instance(seed);
  if (seed % 2 == 0) {
    p.training.max_epochs = std::min(p.training.max_epochs, 6 + static_cast<int>(seed % 7));
  } else {
    p.training.max_epochs = 24;
    p.training.max_switches = 1;
  }
  return p;
}

TEST(CostToGo, BoundsNeverExceedWhatAnExhaustiveSearchNeeds) {
  std::size_t checked = 0, rejected = 0, reachable = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const Problem p = instance(seed);
    const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
    for (const auto& d : every_selection(p.datasets.size())) {
      const SelectionData data = make_selection_data(ctx, d);
      const LossGrid grid = make_grid(ctx, data, 0.002);
      CostToGo::Memory memory;
      CostToGo bound(ctx, data, Weights{1, 0}, grid.mean_base, grid.mean_top, 256, memory);
      Exhaustive search(ctx, data, bound);
      for (std::size_t v = 0; v < data.pareto.size(); ++v) {
        if (data.pareto[v].empty()) continue;
        const LossState first = step(data.dynamics[v], initial_state(ctx, v));
        bool any = false;
        for (std::size_t q = 0; q < data.pareto[v].size(); ++q) {
          any = std::isfinite(search.from(v, q, 0, first, 1).cost) || any;
        }
        // What the search does with a first phase: reject it when the bound needs more than H.
        if (1 + bound.epochs(v, 0, first.mean) > ctx.horizon()) {
          ++rejected;
          EXPECT_FALSE(any) << "seed " << seed << ": a rejected first phase of variant " << v
                            << " reaches the guarantee";
        }
        reachable += any ? 1 : 0;
      }
      checked += search.checked();
    }
  }
  // The checks above ran on many states, and both kinds of first phase occurred.
  EXPECT_GT(checked, 10'000u);
  EXPECT_GT(rejected, 10u);
  EXPECT_GT(reachable, 10u);
}

TEST(CostToGo, VarianceMakesTheBoundTighter) {
  // The same state with a variance near the least stationary one needs no less, and on some
  // state strictly more, than with no variance known: the second table is used and matters.
  const Problem p = testing::large_instance(1, 4, 4, 3, 150);
  const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
  std::vector<std::size_t> all(p.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const SelectionData data = make_selection_data(ctx, all);
  const LossGrid grid = make_grid(ctx, data, 0.002);
  CostToGo::Memory memory;
  CostToGo bound(ctx, data, Weights{1, 0}, grid.mean_base, grid.mean_top, 1024, memory);
  double stationary = kInf;
  for (std::size_t v = 0; v < data.dynamics.size(); ++v) {
    const VariantDynamics& d = data.dynamics[v];
    if (!data.pareto[v].empty()) {
      stationary = std::min(stationary, d.noise_variance / (1 - d.rho * d.rho));
    }
  }
  EXPECT_FALSE(bound.upper_built());
  int stricter = 0;
  for (double mean = p.target.loss; mean < grid.mean_top; mean += 0.01) {
    const double loose = bound.bound(0, 0, mean, 0.0);
    const double tight = bound.bound(0, 0, mean, stationary);
    EXPECT_GE(tight, loose);
    if (tight > loose) ++stricter;
  }
  EXPECT_TRUE(bound.upper_built());
  EXPECT_GT(stricter, 0);
}

TEST(CostToGo, ReusedTablesAreTheFreshOnes) {
  // One Memory through a sequence of weights and selections: each CostToGo answers exactly as
  // one built in a Memory of its own, and reuses what its inputs allow.
  const Problem p = testing::large_instance(3, 8, 4, 6, 120);
  const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
  std::vector<std::size_t> all(p.datasets.size()), some{0, 2, 5};
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const SelectionData whole = make_selection_data(ctx, all);
  const SelectionData part = make_selection_data(ctx, some);
  struct Step {
    const SelectionData* data;
    Weights weights;
    CostToGo::Reuse reuse;
  };
  const std::vector<Step> steps{
      {&whole, {1, 0}, CostToGo::Reuse::None},
      {&whole, {1, 0}, CostToGo::Reuse::Everything},
      {&whole, {1, 0.5}, CostToGo::Reuse::Transitions},
      {&whole, {0, 1}, CostToGo::Reuse::Transitions},
      {&whole, {0, 1}, CostToGo::Reuse::Everything},
      {&part, {0, 1}, CostToGo::Reuse::None},
      {&whole, {1, 0.5}, CostToGo::Reuse::None},
  };
  CostToGo::Memory shared;
  int compared = 0;
  for (const Step& step : steps) {
    const LossGrid grid = make_grid(ctx, *step.data, 0.002);
    CostToGo reused(ctx, *step.data, step.weights, grid.mean_base, grid.mean_top, 512, shared);
    EXPECT_EQ(reused.reuse(), step.reuse);
    CostToGo::Memory own;
    CostToGo fresh(ctx, *step.data, step.weights, grid.mean_base, grid.mean_top, 512, own);
    for (std::size_t v = 0; v < p.models.size(); ++v) {
      for (int s = 0; s <= ctx.max_switches(); ++s) {
        for (double mean = grid.mean_base; mean <= grid.mean_top; mean += 0.003) {
          for (double variance : {0.0, 1e-4, 1e-2, 1.0}) {
            // Bitwise: the same tables, not merely close ones.
            EXPECT_EQ(reused.bound(v, s, mean, variance), fresh.bound(v, s, mean, variance));
            ++compared;
          }
          EXPECT_EQ(reused.epochs(v, s, mean), fresh.epochs(v, s, mean));
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(ScheduleSearch, SelectionBeyondTheHorizonSettlesNothing) {
  // One dataset of twenty cannot reach the guarantee in 40 epochs (its decay per epoch is that of
  // a twentieth of the data): the search yields nothing without settling a state, and says no
  // edge was cut at the horizon (a second, horizon-exact pass would reject the same labels).
  Problem p = testing::large_instance(1, 20, 6, 12, 40);
  const SearchContext ctx = make_context(p, guarantee_kappa(p.target));
  const SelectionData data = make_selection_data(ctx, {0});
  ScheduleSearch::Scratch scratch;
  GraphOptions options;
  ScheduleSearch search(ctx, data, options, scratch);
  EXPECT_FALSE(search.next_goal().has_value());
  EXPECT_EQ(search.settled(), 0u);
  EXPECT_FALSE(search.horizon_pruned());
}

}  // namespace
}  // namespace depl::solver::internal
