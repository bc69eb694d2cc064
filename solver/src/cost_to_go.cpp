#include "cost_to_go.hpp"

#include <cmath>
#include <limits>

namespace depl::solver::internal {

CostToGo::CostToGo(const SearchContext& ctx, const SelectionData& data, const Weights& weights,
                   double mean_low, double mean_high, int cells)
    : low_(mean_low), cells_(cells), switch_levels_(ctx.max_switches() + 1) {
  const Problem& problem = *ctx.problem;
  const std::size_t nv = problem.models.size();
  step_ = mean_high > mean_low ? (mean_high - mean_low) / cells : 1.0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  table_.assign(nv * static_cast<std::size_t>(switch_levels_) * static_cast<std::size_t>(cells + 1),
                kInf);

  // Cheapest epoch and cheapest fixed part (startup + switch overhead, no staging) per variant.
  std::vector<double> epoch_min(nv, kInf);
  std::vector<double> fixed_rate_min(nv, kInf), fixed_time_min(nv, kInf);
  for (std::size_t v = 0; v < nv; ++v) {
    for (const Placement& p : data.pareto[v]) {
      epoch_min[v] = std::min(epoch_min[v], weights.of(p.rate, p.epoch_seconds));
      fixed_rate_min[v] =
          std::min(fixed_rate_min[v], weights.cost_weight * p.rate + weights.time_weight);
      fixed_time_min[v] = std::min(fixed_time_min[v], problem.pools[p.pool].startup_seconds);
    }
  }
  // A lower bound on (rate-weight) * (startup + tau) is min(rate-weight) * (min startup + tau).
  auto fixed_min = [&](std::size_t v, double tau) {
    return fixed_rate_min[v] * (fixed_time_min[v] + tau);
  };

  // Per variant, computed once rather than per cell (the same expressions, so the same bits):
  // the mean at or below which the bound is 0, and the allowed switches out of it.
  struct SwitchEdge {
    std::size_t to = 0;
    double jump = 0;
    double fixed = 0;  // fixed part of the switch plus the next variant's first epoch
  };
  std::vector<double> goal_mean(nv);
  std::vector<std::vector<SwitchEdge>> edges(nv);
  for (std::size_t v = 0; v < nv; ++v) {
    goal_mean[v] =
        problem.target.loss - ctx.kappa * std::sqrt(data.dynamics[v].noise_variance) + 1e-12;
    for (std::size_t w = 0; w < nv; ++w) {
      const int sw = ctx.switch_index[v][w];
      if (sw == kNone || data.pareto[w].empty()) continue;
      const Switch& swi = problem.switching[static_cast<std::size_t>(sw)];
      edges[v].push_back({w, swi.jump_mean, fixed_min(w, swi.overhead_seconds) + epoch_min[w]});
    }
  }

  // Where an epoch (kGoal: none needed; kStays: it does not lower the mean) and a switch lead
  // from each cell: the same on every switch level, so computed once.
  constexpr int kGoal = -3, kStays = -2;
  const std::size_t row = static_cast<std::size_t>(cells_ + 1);
  std::vector<int> stay(nv * row, kStays);
  std::vector<std::vector<int>> after(nv);
  for (std::size_t v = 0; v < nv; ++v) {
    if (data.pareto[v].empty()) continue;
    const VariantDynamics& d = data.dynamics[v];
    after[v].assign(edges[v].size() * row, 0);
    for (int i = 0; i <= cells_; ++i) {
      const double m = low_ + i * step_;
      int& to = stay[v * row + static_cast<std::size_t>(i)];
      if (m <= goal_mean[v]) {
        to = kGoal;
        continue;
      }
      const double next = d.floor + (m - d.floor) * d.rho;
      if (next < m) {
        const int j = cell_below(next);
        to = j < 0 ? -1 : std::min(j, i - 1 < 0 ? 0 : i - 1);
      }
      for (std::size_t k = 0; k < edges[v].size(); ++k) {
        const SwitchEdge& e = edges[v][k];
        const VariantDynamics& dw = data.dynamics[e.to];
        const double landing = dw.floor + (m + e.jump - dw.floor) * dw.rho;
        const int j = cell_below(landing);
        after[v][k * row + static_cast<std::size_t>(i)] = j < 0 ? -1 : std::min(j, cells_);
      }
    }
  }

  for (int s = switch_levels_ - 1; s >= 0; --s) {
    for (int i = 0; i <= cells_; ++i) {
      for (std::size_t v = 0; v < nv; ++v) {
        if (data.pareto[v].empty()) continue;
        double& h = at(v, s, i);
        const int to = stay[v * row + static_cast<std::size_t>(i)];
        if (to == kGoal) {
          h = 0;
          continue;
        }
        double best = kInf;
        if (to != kStays) best = epoch_min[v] + (to < 0 ? 0.0 : at(v, s, to));
        if (s + 1 < switch_levels_) {
          for (std::size_t k = 0; k < edges[v].size(); ++k) {
            const int j = after[v][k * row + static_cast<std::size_t>(i)];
            const double rest = j < 0 ? 0.0 : at(edges[v][k].to, s + 1, j);
            best = std::min(best, edges[v][k].fixed + rest);
          }
        }
        h = best;
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

double CostToGo::bound(std::size_t model, int switches, double mean) const {
  const int i = cell_below(mean);
  if (i < 0) return 0;
  return at(model, switches, i);
}

}  // namespace depl::solver::internal
