#include "schedule_graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace depl::solver::internal {
namespace {

constexpr int kCostToGoCells = 1024;

std::int32_t cell_up(double value, double base, double step) {
  const double raw = std::ceil((value - base) / step);
  if (raw >= 2e9) return 2'000'000'000;
  if (raw <= -2e9) return -2'000'000'000;
  auto cell = static_cast<std::int32_t>(raw);
  while (base + cell * step < value && cell < 2'000'000'000) ++cell;  // rounding must be up
  return cell;
}

}  // namespace

LossGrid make_grid(const SearchContext& ctx, const SelectionData& data, double eta) {
  const Problem& problem = *ctx.problem;
  const int switches = ctx.max_switches();
  double floor_min = std::numeric_limits<double>::infinity();
  double floor_max = -floor_min, start_max = -floor_min, start_min = floor_min;
  double noise_max = 0;
  for (std::size_t v = 0; v < problem.models.size(); ++v) {
    if (data.pareto[v].empty()) continue;
    const VariantDynamics& d = data.dynamics[v];
    floor_min = std::min(floor_min, d.floor);
    floor_max = std::max(floor_max, d.floor);
    start_max = std::max(start_max, problem.models[v].loss.initial_loss);
    start_min = std::min(start_min, problem.models[v].loss.initial_loss);
    const double keep = d.rho * d.rho;
    noise_max = std::max(
        noise_max, keep < 1 ? d.noise_variance / (1 - keep) : d.noise_variance * ctx.horizon());
  }
  if (ctx.has_start) start_max = start_min = ctx.start_mean;
  double jump_down = 0, jump_up = 0, jump_var = 0;
  for (const Switch& s : problem.switching) {
    jump_down = std::max(jump_down, -s.jump_mean);
    jump_up = std::max(jump_up, s.jump_mean);
    jump_var = std::max(jump_var, s.jump_stddev * s.jump_stddev);
  }
  LossGrid g;
  if (!std::isfinite(floor_min)) return g;  // nothing placeable; the search yields nothing
  g.mean_base = std::min(floor_min, start_min) - switches * jump_down;
  g.mean_top = std::max(floor_max, start_max) + switches * jump_up;
  double range = start_max - floor_min;
  if (range <= 0) range = g.mean_top - g.mean_base;
  if (range <= 0) range = 1;
  g.mean_step = eta * range;
  double variance_max =
      noise_max + switches * jump_var + (ctx.has_start ? ctx.start_variance : 0.0);
  g.variance_top = variance_max;
  // Only variances up to ((L* - lowest mean) / kappa)^2 can ever meet the guarantee; a grid over
  // a wider range (a small selection makes rho close to 1 and the stationary variance huge)
  // would waste its resolution where it matters.
  if (ctx.kappa > 0) {
    const double margin = std::max(problem.target.loss - g.mean_base, 0.0) / ctx.kappa;
    if (margin > 0) variance_max = std::min(variance_max, margin * margin);
  }
  g.variance_step = variance_max > 0 ? eta * variance_max : 1.0;
  return g;
}

ScheduleSearch::ScheduleSearch(const SearchContext& ctx, const SelectionData& data,
                               const GraphOptions& options, Scratch& scratch)
    : ctx_(ctx),
      data_(data),
      options_(options),
      grid_(make_grid(ctx, data, options.eta)),
      cost_to_go_(ctx, data, options.weights, grid_.mean_base, grid_.mean_top, kCostToGoCells,
                  scratch.bound),
      labels_(scratch.labels),
      queue_(scratch.heap),
      index_(scratch.index),
      scratch_(scratch) {
  labels_.clear();
  queue_.clear();
  for (std::size_t layer : scratch_.active_layers) index_[layer].deactivate();
  scratch_.active_layers.clear();
  for (const auto& p : data.pareto) max_placements_ = std::max(max_placements_, p.size());
  const std::size_t contexts =
      data.pareto.size() * (ctx.problem->switching.size() + 1) * (ctx.problem->pools.size() + 1);
  candidate_cache_.resize(contexts);
  candidate_ready_.assign(contexts, false);
  const std::size_t layers =
      data.pareto.size() * static_cast<std::size_t>(ctx.max_switches() + 1) * max_placements_;
  if (options_.fewer_epochs_reexpand) {
    frontier_.resize(layers);
  } else {
    if (index_.size() < layers) index_.resize(layers);
    // Means stay within [mean_base, mean_top]; a cell outside is still handled, only slower.
    // The cap keeps a tiny eta from costing 24 bytes per cell per layer (eta = 0.002 needs
    // about 1/eta cells).
    const double span = std::ceil((grid_.mean_top - grid_.mean_base) / grid_.mean_step) + 2;
    mean_cells_ = static_cast<std::int32_t>(std::clamp(span, 1.0, 16384.0));
  }
}

std::size_t ScheduleSearch::layer_of(const Label& l, int switches) const {
  return (l.model * static_cast<std::size_t>(ctx_.max_switches() + 1) +
          static_cast<std::size_t>(switches)) *
             max_placements_ +
         l.placement;
}

bool ScheduleSearch::is_goal(const Label& l) const {
  return meets(ctx_.kappa, ctx_.problem->target.loss, l.state.mean,
               reported(data_.dynamics[l.model], l.state));
}

bool ScheduleSearch::dominated(const Label& l) const {
  const double weight = l.weight * (1 + 1e-12);
  // An epoch whose mean stays in its parent's cell is judged only against labels in lower mean
  // cells: its parent, settled in that cell at less weight, is behind it, not ahead (its exact
  // mean is higher), and dropping it would end the phase wherever an epoch lowers the mean by
  // less than a cell (close to the floor, or with slow decay).
  const std::int32_t mean_cell = l.stalled ? l.mean_cell - 1 : l.mean_cell;
  if (!options_.fewer_epochs_reexpand) {
    // The label's own layer first: most labels dropped are beaten by one with the same history.
    for (int s = l.switches; s >= 0; --s) {
      const DominanceIndex& index = index_[layer_of(l, s)];
      if (!index.empty() && index.covers(mean_cell, l.variance_cell, weight)) return true;
    }
    return false;
  }
  for (int s = l.switches; s >= 0; --s) {
    if (frontier_[layer_of(l, s)].covers(mean_cell, l.variance_cell, l.epochs, weight)) return true;
  }
  return false;
}

void ScheduleSearch::settle(const Label& l) {
  if (!options_.fewer_epochs_reexpand) {
    // Only whether some settled label dominates matters, so the index keeps them all.
    DominanceIndex& index = index_[layer_of(l, l.switches)];
    const std::size_t before = index.memory_bytes();
    const bool activated = index.empty();
    if (activated) {
      index.reset(0, mean_cells_);
      scratch_.active_layers.push_back(layer_of(l, l.switches));
    }
    index.insert(l.mean_cell, l.variance_cell, l.weight);
    scratch_.index_bytes += index.memory_bytes() - before;
    if (activated &&
        !ctx_.report_memory(MemoryUse::GraphSearch, memory_bytes(labels_.capacity()))) {
      gave_up_ = true;
    }
    return;
  }
  frontier_[layer_of(l, l.switches)].insert(l.mean_cell, l.variance_cell, l.epochs, l.weight);
}

void ScheduleSearch::push(Label label) {
  if (labels_.size() >= options_.max_labels) {
    gave_up_ = true;
    return;
  }
  if (labels_.size() == labels_.capacity()) {
    // About to grow: account for what the buffers will hold (they double).
    const std::size_t grown = std::max<std::size_t>(2 * labels_.capacity(), 1024);
    if (!ctx_.report_memory(MemoryUse::GraphSearch, memory_bytes(grown)) || ctx_.out_of_budget()) {
      gave_up_ = true;
      return;
    }
  }
  label.mean_cell = cell_up(label.state.mean, grid_.mean_base, grid_.mean_step);
  label.variance_cell = cell_up(label.state.variance, 0.0, grid_.variance_step);
  // Dominance is tested when a label is popped; testing every push as well costs more than
  // the heap entries it saves.
  // The bound at the bottom of the label's cell: the same for every label that merges there.
  const double mean_low = grid_.mean_base + (label.mean_cell - 1) * grid_.mean_step;
  // A phase that stays in its cell is kept going where it could still end the plan by itself
  // within H (a continuation towards a switch loses at most its cell by the merge).
  label.stalled = !label.phase_start && label.mean_cell == labels_[label.parent].mean_cell &&
                  label.epochs + cost_to_go_.epochs(label.model, ctx_.max_switches(), mean_low) <=
                      ctx_.horizon();
  // The first phase's labels: a selection (or first variant) that cannot reach the guarantee
  // within H even in the relaxation is not searched at all. Only there: cutting later labels
  // would hide from the horizon-exact mode the labels it exists for.
  if (label.parent == kRoot &&
      label.epochs + cost_to_go_.epochs(label.model, label.switches, mean_low) > ctx_.horizon()) {
    return;
  }
  // Likewise the variance at the bottom of the label's cell.
  const double variance_low = std::max(0.0, (label.variance_cell - 1) * grid_.variance_step);
  const double h = cost_to_go_.bound(label.model, label.switches, mean_low, variance_low);
  if (!std::isfinite(h)) return;  // even the relaxation cannot reach the guarantee from here
  if (label.weight + h > options_.weight_bound) {
    bounded_ = true;
    return;
  }
  queue_.push_back(
      {label.weight + h, label.seconds, label.phases, static_cast<std::uint32_t>(labels_.size())});
  std::push_heap(queue_.begin(), queue_.end());
  labels_.push_back(label);
}

const std::vector<std::uint16_t>& ScheduleSearch::candidates(std::size_t model, int switch_index,
                                                             int previous_pool) {
  const Problem& problem = *ctx_.problem;
  const std::size_t slot =
      (model * (problem.switching.size() + 1) + static_cast<std::size_t>(switch_index + 1)) *
          (problem.pools.size() + 1) +
      static_cast<std::size_t>(previous_pool + 1);
  if (candidate_ready_[slot]) return candidate_cache_[slot];
  candidate_ready_[slot] = true;
  const double tau =
      switch_index == kNone
          ? 0.0
          : problem.switching[static_cast<std::size_t>(switch_index)].overhead_seconds;
  const auto& placements = data_.pareto[model];
  // A phase of e epochs weighs fixed + e * epoch. Branching on every Pareto placement would
  // multiply the graph by their number; the graph keeps the two that matter for long phases (the
  // least weight per epoch anywhere, and in the pool the previous phase used, which stages
  // nothing). Polishing then re-chooses every phase's placement exactly over the Pareto set.
  auto& out = candidate_cache_[slot];
  auto better_line = [&](std::size_t a, std::size_t b) {
    const Placement& x = placements[a];
    const Placement& y = placements[b];
    const double wx = options_.weights.of(x.rate, x.epoch_seconds);
    const double wy = options_.weights.of(y.rate, y.epoch_seconds);
    if (wx != wy) return wx < wy;
    auto fixed = [&](const Placement& p) {
      return problem.pools[p.pool].startup_seconds +
             (static_cast<int>(p.pool) != previous_pool ? data_.staging_seconds[p.pool] : 0.0) +
             tau;
    };
    const double fx = options_.weights.of(x.rate, fixed(x));
    const double fy = options_.weights.of(y.rate, fixed(y));
    if (fx != fy) return fx < fy;
    return x.epoch_seconds < y.epoch_seconds;
  };
  // ... and the one cheapest for a single epoch (fixed part included), for short last phases.
  auto one_epoch = [&](std::size_t i) {
    const Placement& x = placements[i];
    return options_.weights.of(
        x.rate,
        problem.pools[x.pool].startup_seconds +
            (static_cast<int>(x.pool) != previous_pool ? data_.staging_seconds[x.pool] : 0.0) +
            tau + x.epoch_seconds);
  };
  int best_any = kNone, best_same = kNone, best_short = kNone;
  for (std::size_t i = 0; i < placements.size(); ++i) {
    if (best_any == kNone || better_line(i, static_cast<std::size_t>(best_any))) {
      best_any = static_cast<int>(i);
    }
    if (static_cast<int>(placements[i].pool) == previous_pool &&
        (best_same == kNone || better_line(i, static_cast<std::size_t>(best_same)))) {
      best_same = static_cast<int>(i);
    }
    if (best_short == kNone || one_epoch(i) < one_epoch(static_cast<std::size_t>(best_short))) {
      best_short = static_cast<int>(i);
    }
  }
  for (int c : {best_any, best_same, best_short}) {
    if (c == kNone) continue;
    if (std::find(out.begin(), out.end(), static_cast<std::uint16_t>(c)) == out.end()) {
      out.push_back(static_cast<std::uint16_t>(c));
    }
  }
  return out;
}

void ScheduleSearch::push_phase_start(std::uint32_t parent, std::size_t model, int switches,
                                      int switch_index, int previous_pool, LossState state,
                                      double weight, double seconds, int epochs, int phases) {
  const Problem& problem = *ctx_.problem;
  double tau = 0;
  if (switch_index != kNone) {
    const Switch& s = problem.switching[static_cast<std::size_t>(switch_index)];
    state.mean += s.jump_mean;
    state.variance += s.jump_stddev * s.jump_stddev;
    tau = s.overhead_seconds;
  }
  state = step(data_.dynamics[model], state);
  for (std::uint16_t pi : candidates(model, switch_index, previous_pool)) {
    const Placement& p = data_.pareto[model][pi];
    const double fixed =
        problem.pools[p.pool].startup_seconds +
        (static_cast<int>(p.pool) != previous_pool ? data_.staging_seconds[p.pool] : 0.0) + tau;
    Label child;
    child.weight = weight + options_.weights.of(p.rate, fixed + p.epoch_seconds);
    child.seconds = seconds + fixed + p.epoch_seconds;
    child.state = state;
    child.parent = parent;
    child.model = static_cast<std::uint16_t>(model);
    child.placement = pi;
    child.switches = static_cast<std::uint16_t>(switches);
    child.phases = static_cast<std::uint16_t>(phases + 1);
    child.epochs = epochs + 1;
    child.phase_start = true;
    push(child);
  }
}

void ScheduleSearch::expand(std::uint32_t index) {
  const Label l = labels_[index];  // copy: pushes reallocate labels_
  if (l.epochs + 1 > ctx_.horizon()) {
    horizon_pruned_ = true;
    return;
  }
  const Placement& p = data_.pareto[l.model][l.placement];
  Label next = l;
  next.weight += options_.weights.of(p.rate, p.epoch_seconds);
  next.seconds += p.epoch_seconds;
  next.state = step(data_.dynamics[l.model], l.state);
  next.parent = index;
  next.epochs += 1;
  next.phase_start = false;
  push(next);
  if (l.switches >= ctx_.max_switches()) return;
  for (std::size_t w = 0; w < data_.pareto.size(); ++w) {
    const int sw = ctx_.switch_index[l.model][w];
    if (sw == kNone || data_.pareto[w].empty()) continue;
    push_phase_start(index, w, l.switches + 1, sw, static_cast<int>(p.pool), l.state, l.weight,
                     l.seconds, l.epochs, l.phases);
  }
}

std::optional<Plan> ScheduleSearch::next_goal() {
  if (!started_) {
    started_ = true;
    if (ctx_.horizon() < 1) return std::nullopt;
    for (std::size_t v = 0; v < data_.pareto.size(); ++v) {
      if (data_.pareto[v].empty()) continue;
      int switches = 0;
      int sw = kNone;
      if (ctx_.start_model != kNone && ctx_.start_model != static_cast<int>(v)) {
        sw = ctx_.switch_index[static_cast<std::size_t>(ctx_.start_model)][v];
        if (sw == kNone || ctx_.max_switches() < 1) continue;
        switches = 1;
      }
      push_phase_start(kRoot, v, switches, sw, ctx_.start_pool, initial_state(ctx_, v), 0, 0, 0, 0);
    }
  }
  while (!queue_.empty()) {
    if (ctx_.out_of_budget()) {
      gave_up_ = true;
      return std::nullopt;
    }
    std::pop_heap(queue_.begin(), queue_.end());
    const QueueEntry top = queue_.back();
    queue_.pop_back();
    const Label& l = labels_[top.label];
    if (dominated(l)) continue;
    settle(l);
    if (gave_up_) return std::nullopt;
    if (++settled_ > options_.max_settled_when_bounded && std::isfinite(options_.weight_bound)) {
      gave_up_ = true;
      return std::nullopt;
    }
    const bool goal = is_goal(l);
    expand(top.label);
    if (goal) {
      return reconstruct(top.label);
    }
  }
  return std::nullopt;
}

std::size_t ScheduleSearch::memory_bytes(std::size_t labels) const {
  const std::size_t index = scratch_.index_bytes + index_.capacity() * sizeof(DominanceIndex);
  std::size_t frontier = 0;
  for (const auto& layer : frontier_) frontier += layer.memory_bytes();
  return labels * (sizeof(Label) + sizeof(QueueEntry)) + index + frontier +
         cost_to_go_.memory_bytes() +
         candidate_cache_.capacity() * (sizeof(std::vector<std::uint16_t>) + 8);
}

Plan ScheduleSearch::reconstruct(std::uint32_t goal) const {
  std::vector<std::uint32_t> chain;
  for (std::uint32_t i = goal; i != kRoot; i = labels_[i].parent) chain.push_back(i);
  Plan plan;
  plan.datasets = data_.datasets;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Label& l = labels_[*it];
    if (l.phase_start) {
      const Placement& p = data_.pareto[l.model][l.placement];
      plan.phases.push_back({l.model, 1, p.pool, p.workers});
    } else {
      ++plan.phases.back().epochs;
    }
  }
  return plan;
}

}  // namespace depl::solver::internal
