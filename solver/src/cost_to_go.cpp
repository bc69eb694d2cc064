#include "cost_to_go.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace depl::solver::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kStays = -2;

// The second table's variance floor, as a fraction of s*. Most states a search settles have run
// long enough for their variance to be close to s* (measured on the target instances: 0.9 or
// 0.98 prune a little less, more levels save few states for the time they take to build).
constexpr double kUpperLevel = 0.95;

}  // namespace

CostToGo::CostToGo(const SearchContext& ctx, const SelectionData& data, const Weights& weights,
                   double mean_low, double mean_high, int cells, Memory& memory)
    : low_(mean_low),
      cells_(cells),
      switch_levels_(ctx.max_switches() + 1),
      variants_(ctx.problem->models.size()),
      target_loss_(ctx.problem->target.loss),
      kappa_(ctx.kappa),
      dynamics_(data.dynamics),
      memory_(memory) {
  const Problem& problem = *ctx.problem;
  const std::size_t nv = variants_;
  step_ = mean_high > mean_low ? (mean_high - mean_low) / cells : 1.0;
  placeable_.resize(nv);
  for (std::size_t v = 0; v < nv; ++v) placeable_[v] = !data.pareto[v].empty();

  // Cheapest epoch and cheapest fixed part (startup + switch overhead, no staging) per variant.
  epoch_min_.assign(nv, kInf);
  std::vector<double> fixed_rate_min(nv, kInf), fixed_time_min(nv, kInf);
  for (std::size_t v = 0; v < nv; ++v) {
    for (const Placement& p : data.pareto[v]) {
      epoch_min_[v] = std::min(epoch_min_[v], weights.of(p.rate, p.epoch_seconds));
      fixed_rate_min[v] =
          std::min(fixed_rate_min[v], weights.cost_weight * p.rate + weights.time_weight);
      fixed_time_min[v] = std::min(fixed_time_min[v], problem.pools[p.pool].startup_seconds);
    }
  }
  // A lower bound on (rate-weight) * (startup + tau) is min(rate-weight) * (min startup + tau).
  auto fixed_min = [&](std::size_t v, double tau) {
    return fixed_rate_min[v] * (fixed_time_min[v] + tau);
  };
  edges_.resize(nv);
  for (std::size_t v = 0; v < nv; ++v) {
    for (std::size_t w = 0; w < nv; ++w) {
      const int sw = ctx.switch_index[v][w];
      if (sw == kNone || !placeable_[w]) continue;
      const Switch& swi = problem.switching[static_cast<std::size_t>(sw)];
      edges_[v].push_back({w, swi.jump_mean, fixed_min(w, swi.overhead_seconds) + epoch_min_[w]});
    }
  }

  // s*: the least stationary variance. An epoch of variant v leaves rho_v^2 s + sigma_v^2 >=
  // min(s, s*), so a variance at least c <= s* stays at least c.
  stationary_ = kInf;
  for (std::size_t v = 0; v < nv; ++v) {
    if (!placeable_[v]) continue;
    const double keep = dynamics_[v].rho * dynamics_[v].rho;
    if (keep < 1) stationary_ = std::min(stationary_, dynamics_[v].noise_variance / (1 - keep));
  }
  horizon_ = std::max(ctx.horizon(), 0);
  upper_ = kappa_ > 0 && std::isfinite(stationary_) && stationary_ > 0;

  std::vector<Level>& levels = memory_.levels;
  if (same_transitions()) {
    reuse_ = same_weights() ? Reuse::Everything : Reuse::Transitions;
  } else {
    levels.resize(2);
    levels[0].variance = 0;
    // A hair below the level keeps rounding in the bound's favour.
    levels[1].variance = kUpperLevel * stationary_ * (1 - 1e-9);
    for (Level& level : levels) level.last_built = false;
    build_transitions();
    build_last(levels[0]);
    build_epochs();
  }
  if (reuse_ != Reuse::Everything) {
    for (Level& level : levels) level.built = false;
  }
  remember_inputs();
  if (!levels[0].built) build(levels[0]);
}

bool CostToGo::same_transitions() const {
  const Memory& m = memory_;
  if (!m.built || m.low != low_ || m.step != step_ || m.cells != cells_ ||
      m.switch_levels != switch_levels_ || m.horizon != horizon_ ||
      m.target_loss != target_loss_ || m.kappa != kappa_ || m.placeable != placeable_ ||
      m.dynamics.size() != dynamics_.size() || m.edges.size() != edges_.size()) {
    return false;
  }
  for (std::size_t v = 0; v < dynamics_.size(); ++v) {
    const VariantDynamics& a = m.dynamics[v];
    const VariantDynamics& b = dynamics_[v];
    if (a.rho != b.rho || a.rho_below != b.rho_below || a.floor != b.floor ||
        a.noise_variance != b.noise_variance || a.validation_variance != b.validation_variance) {
      return false;
    }
  }
  for (std::size_t v = 0; v < edges_.size(); ++v) {
    if (m.edges[v].size() != edges_[v].size()) return false;
    for (std::size_t k = 0; k < edges_[v].size(); ++k) {
      if (m.edges[v][k].to != edges_[v][k].to || m.edges[v][k].jump != edges_[v][k].jump) {
        return false;
      }
    }
  }
  return true;
}

bool CostToGo::same_weights() const {
  const Memory& m = memory_;
  if (m.epoch_min != epoch_min_) return false;
  for (std::size_t v = 0; v < edges_.size(); ++v) {
    for (std::size_t k = 0; k < edges_[v].size(); ++k) {
      if (m.edges[v][k].fixed != edges_[v][k].fixed) return false;
    }
  }
  return true;
}

void CostToGo::remember_inputs() {
  Memory& m = memory_;
  m.built = true;
  m.low = low_;
  m.step = step_;
  m.cells = cells_;
  m.switch_levels = switch_levels_;
  m.horizon = horizon_;
  m.target_loss = target_loss_;
  m.kappa = kappa_;
  m.placeable = placeable_;
  m.dynamics = dynamics_;
  m.edges = edges_;
  m.epoch_min = epoch_min_;
}

void CostToGo::build_transitions() {
  // Where an epoch and a switch lead from each cell: the same on every switch level and at every
  // variance level, so computed once.
  const std::size_t nv = variants_;
  const std::size_t row = static_cast<std::size_t>(cells_ + 1);
  std::vector<int>& stay_ = memory_.stay;
  std::vector<std::vector<int>>& after_ = memory_.after;
  stay_.assign(nv * row, kStays);
  if (after_.size() < nv) after_.resize(nv);
  // Both move up with the cell, so each is a walk rather than a division per cell: the highest
  // cell (at most cells_) whose lowest mean is at or below the value, -1 below the grid.
  auto walk = [&](int& j, double value) {
    while (j < cells_ && low_ + (j + 1) * step_ <= value) ++j;
    return j;
  };
  for (std::size_t v = 0; v < nv; ++v) {
    if (!placeable_[v]) continue;
    const VariantDynamics& d = dynamics_[v];
    int* stay_row = stay_.data() + v * row;
    int next_cell = -1;
    for (int i = 0; i <= cells_; ++i) {
      const double m = low_ + i * step_;
      const double next = next_mean(d, m);
      const int j = walk(next_cell, next);
      if (next < m) stay_row[i] = j < 0 ? -1 : std::min(j, i - 1 < 0 ? 0 : i - 1);
    }
    after_[v].assign(edges_[v].size() * row, 0);
    for (std::size_t k = 0; k < edges_[v].size(); ++k) {
      const SwitchEdge& e = edges_[v][k];
      const VariantDynamics& dw = dynamics_[e.to];
      int* after_row = after_[v].data() + k * row;
      int landing_cell = -1;
      for (int i = 0; i <= cells_; ++i) {
        const double m = low_ + i * step_;
        after_row[i] = walk(landing_cell, next_mean(dw, m + e.jump));
      }
    }
  }
}

void CostToGo::build_last(Level& level) const {
  // The last phase exactly: from a state of variant v at a cell's lowest mean, with a variance
  // of at least b = max(c, sigma_v^2), the fewest further epochs of v after which
  // mean + kappa * sqrt(variance + nu_v^2) <= L* (the variance moves towards v's stationary value as
  // well). Fewer epochs never suffice from a higher mean, so one sweep over the cells.
  const std::size_t nv = variants_;
  const std::size_t row = static_cast<std::size_t>(cells_ + 1);
  level.last_built = true;
  std::vector<int>& last = level.last;
  last.assign(nv * row, kNever);
  std::vector<double> decay(static_cast<std::size_t>(horizon_) + 1);
  std::vector<double> decay_below(decay.size());
  std::vector<double> spread(decay.size());
  for (std::size_t v = 0; v < nv; ++v) {
    if (!placeable_[v]) continue;
    const VariantDynamics& d = dynamics_[v];
    double a = 1, b = 1;
    double variance = std::max(level.variance, d.noise_variance);
    for (std::size_t t = 0; t < decay.size(); ++t) {
      decay[t] = a;
      decay_below[t] = b;
      spread[t] = kappa_ * std::sqrt(variance + d.validation_variance);
      a *= d.rho;
      b *= d.rho_below;
      variance = d.rho * d.rho * variance + d.noise_variance;
    }
    // The slack keeps the closed form's rounding from ever deciding against a plan.
    const double target = target_loss_ + 1e-12 + 1e-9 * std::max(1.0, std::abs(target_loss_));
    std::size_t t = 0;
    for (int i = 0; i <= cells_; ++i) {
      const double m = low_ + i * step_;
      const std::vector<double>& kept = m < d.floor ? decay_below : decay;
      while (t < decay.size() && d.floor + (m - d.floor) * kept[t] + spread[t] > target) ++t;
      if (t == decay.size()) break;  // this cell and every higher one: not within the horizon
      last[v * row + static_cast<std::size_t>(i)] = static_cast<int>(t);
    }
  }
}

void CostToGo::build(Level& level) const {
  if (!level.last_built) build_last(level);
  build_weights(level);
}

// The tables are filled switch level by switch level from the top; within one, a variant's
// cells from the bottom (an epoch only leads to a lower cell, a switch to the level above). Two
// bounds per state: with a switch still to come (`later`: epochs of v, then a switch; the state
// forgets its variance there, so staying never leads to the last phase's test), and overall (the
// last phase now, or a switch later).
void CostToGo::build_weights(Level& level) const {
  const std::size_t nv = variants_;
  const std::size_t row = static_cast<std::size_t>(cells_ + 1);
  level.built = true;
  const std::vector<int>& stay_ = memory_.stay;
  const std::vector<std::vector<int>>& after_ = memory_.after;
  std::vector<double>& later = memory_.later;
  // Every cell of a variant with a placement is written below; the others stay infinite.
  level.weight.resize(nv * static_cast<std::size_t>(switch_levels_) * row);
  later.resize(level.weight.size());
  for (std::size_t v = 0; v < nv; ++v) {
    if (placeable_[v]) continue;
    for (int s = 0; s < switch_levels_; ++s) {
      std::fill_n(level.weight.begin() + static_cast<std::ptrdiff_t>(slot(v, s, 0)), row, kInf);
      std::fill_n(later.begin() + static_cast<std::ptrdiff_t>(slot(v, s, 0)), row, kInf);
    }
  }
  std::vector<double>& by_switch = memory_.by_switch;
  by_switch.resize(row);
  for (int s = switch_levels_ - 1; s >= 0; --s) {
    const bool can_switch = s + 1 < switch_levels_;
    for (std::size_t v = 0; v < nv; ++v) {
      if (!placeable_[v]) continue;
      const std::size_t base = slot(v, s, 0);
      const int* stay_row = stay_.data() + v * row;
      const int* last_row = level.last.data() + v * row;
      double* weight = level.weight.data() + base;
      double* later_weight = later.data() + base;
      const double epoch = epoch_min_[v];
      const std::vector<SwitchEdge>& edges = edges_[v];
      // The best switch from each cell, two edges at a time: the cells do not depend on each
      // other, and min() is exact in any order.
      double* switched = by_switch.data();
      const std::size_t switches = can_switch ? edges.size() : 0;
      auto landing = [&](std::size_t k) {
        return [after_row = after_[v].data() + k * row,
                rest = level.weight.data() + slot(edges[k].to, s + 1, 0),
                fixed = edges[k].fixed](std::size_t i) {
          const int j = after_row[i];
          return fixed + (j < 0 ? 0.0 : rest[j]);
        };
      };
      std::size_t k = 0;
      if (switches % 2 == 1) {
        const auto a = landing(0);
        for (std::size_t i = 0; i < row; ++i) switched[i] = a(i);
        k = 1;
      } else if (switches > 0) {
        const auto a = landing(0), b = landing(1);
        for (std::size_t i = 0; i < row; ++i) switched[i] = std::min(a(i), b(i));
        k = 2;
      }
      for (; k < switches; k += 2) {
        const auto a = landing(k), b = landing(k + 1);
        for (std::size_t i = 0; i < row; ++i) {
          switched[i] = std::min(switched[i], std::min(a(i), b(i)));
        }
      }
      auto fill = [&](auto with_switch) {
        for (std::size_t i = 0; i < row; ++i) {
          const int to = stay_row[i];
          double best = kInf;
          if (to != kStays) best = epoch + (to < 0 ? 0.0 : later_weight[to]);
          if constexpr (decltype(with_switch)::value) best = std::min(best, switched[i]);
          later_weight[i] = best;
          const int end = last_row[i];
          weight[i] = std::min(best, end < kNever ? end * epoch : kInf);
        }
      };
      if (switches > 0) {
        fill(std::true_type{});
      } else {
        fill(std::false_type{});
      }
    }
  }
}

// The same with one per epoch, at c = 0.
void CostToGo::build_epochs() const {
  const std::size_t nv = variants_;
  const std::size_t row = static_cast<std::size_t>(cells_ + 1);
  const std::vector<int>& stay_ = memory_.stay;
  const std::vector<std::vector<int>>& after_ = memory_.after;
  const std::vector<int>& last = memory_.levels[0].last;
  std::vector<int>& table = memory_.epochs;
  table.assign(nv * static_cast<std::size_t>(switch_levels_) * row, kNever);
  std::vector<int>& later_epochs = memory_.later_epochs;
  later_epochs.assign(table.size(), kNever);
  for (int s = switch_levels_ - 1; s >= 0; --s) {
    const bool can_switch = s + 1 < switch_levels_;
    for (std::size_t v = 0; v < nv; ++v) {
      if (!placeable_[v]) continue;
      const std::size_t base = slot(v, s, 0);
      const int* stay_row = stay_.data() + v * row;
      const int* last_row = last.data() + v * row;
      const std::vector<SwitchEdge>& edges = edges_[v];
      int* epochs = table.data() + base;
      int* later_count = later_epochs.data() + base;
      for (int i = 0; i <= cells_; ++i) {
        const int to = stay_row[i];
        int fewest = kNever;
        if (to != kStays) fewest = to < 0 ? 1 : std::min(kNever, later_count[to] + 1);
        if (can_switch) {
          for (std::size_t k = 0; k < edges.size(); ++k) {
            const int j = after_[v][k * row + static_cast<std::size_t>(i)];
            const int more = j < 0 ? 0 : table[slot(edges[k].to, s + 1, j)];
            fewest = std::min(fewest, std::min(kNever, more + 1));
          }
        }
        later_count[i] = fewest;
        epochs[i] = std::min(fewest, last_row[i]);
      }
    }
  }
}

int CostToGo::cell_below(double mean) const {
  if (mean < low_) return -1;
  int i = static_cast<int>(std::floor((mean - low_) / step_));
  if (i > cells_) return cells_;
  while (i > 0 && low_ + i * step_ > mean) --i;
  return i;
}

double CostToGo::bound(std::size_t model, int switches, double mean, double variance) {
  const int i = cell_below(mean);
  if (i < 0) return 0;
  const std::size_t at = slot(model, switches, i);
  if (upper_ && std::min(variance, stationary_) >= memory_.levels[1].variance) {
    Level& level = memory_.levels[1];
    if (!level.built) build(level);
    // A stricter goal never needs less; the max only guards against rounding.
    return std::max(level.weight[at], memory_.levels[0].weight[at]);
  }
  return memory_.levels[0].weight[at];
}

CostToGo::Need CostToGo::need(std::size_t model, int switches, double mean, double variance) {
  const int i = cell_below(mean);
  if (i < 0) return {0.0, 0};
  const std::size_t at = slot(model, switches, i);
  const int epochs = memory_.epochs[at];
  if (upper_ && std::min(variance, stationary_) >= memory_.levels[1].variance) {
    Level& level = memory_.levels[1];
    if (!level.built) build(level);
    return {std::max(level.weight[at], memory_.levels[0].weight[at]), epochs};
  }
  return {memory_.levels[0].weight[at], epochs};
}

int CostToGo::epochs(std::size_t model, int switches, double mean) const {
  const int i = cell_below(mean);
  if (i < 0) return 0;
  return memory_.epochs[slot(model, switches, i)];
}

std::size_t CostToGo::memory_bytes() const {
  const Memory& m = memory_;
  std::size_t bytes =
      (m.stay.capacity() + m.epochs.capacity() + m.later_epochs.capacity()) * sizeof(int) +
      (m.later.capacity() + m.by_switch.capacity()) * sizeof(double);
  for (const auto& a : m.after) bytes += a.capacity() * sizeof(int);
  for (const Level& l : m.levels) {
    bytes += l.weight.capacity() * sizeof(double) + l.last.capacity() * sizeof(int);
  }
  return bytes;
}

bool CostToGo::upper_built() const {
  return upper_ && memory_.levels[1].built;
}

}  // namespace depl::solver::internal
