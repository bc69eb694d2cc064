#include "reachability.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

#include "schedule_graph.hpp"
#include "vertex_table.hpp"

namespace depl::solver::internal {
namespace {

constexpr std::size_t kMaxLabels = 2'000'000;
constexpr int kHorizonFactor = 50;  // how far past the horizon to look for the guarantee
constexpr std::size_t kMemoryCheckEvery = 16384;  // labels between two memory checks

struct Node {
  LossState state;
  std::uint32_t parent = 0xFFFFFFFFu;
  std::uint16_t model = 0;
  std::uint16_t switches = 0;
  std::int32_t epochs = 0;
  bool phase_start = false;
};

// What no later epoch can go below, whatever the schedule (docs/depl-model.md section 2): an
// epoch moves the mean towards its variant's floor, and the variance towards the variant's
// stationary variance noise / (1 - rho^2) and never below its noise; a switch moves the mean by
// its jump and adds to the variance. So after a state (m, s) with k switches left every epoch
// ends with a mean of at least min(m, least floor) - k * (the largest drop of a switch) and a
// variance of at least max(least noise, min(s, least stationary variance)), to which a report
// adds at least the least transient noise.
struct LaterBound {
  double floor = std::numeric_limits<double>::infinity();
  double jump_down = 0;
  double noise = std::numeric_limits<double>::infinity();
  double stationary = std::numeric_limits<double>::infinity();
  double transient = std::numeric_limits<double>::infinity();

  LaterBound(const Problem& problem, const SelectionData& data) {
    for (std::size_t v = 0; v < data.pareto.size(); ++v) {
      if (data.pareto[v].empty()) continue;
      const VariantDynamics& d = data.dynamics[v];
      floor = std::min(floor, d.floor);
      noise = std::min(noise, d.noise_variance);
      transient = std::min(transient, d.validation_variance);
      const double keep = d.rho * d.rho;
      if (keep < 1) stationary = std::min(stationary, d.noise_variance / (1 - keep));
    }
    for (const Switch& s : problem.switching) jump_down = std::max(jump_down, -s.jump_mean);
  }

  // False when no epoch after `state` can meet the guarantee.
  bool can_meet(const SearchContext& ctx, const LossState& state, int switches_left) const {
    const double mean = std::min(state.mean, floor) - switches_left * jump_down;
    const double variance = std::max(noise, std::min(state.variance, stationary));
    return meets(ctx.kappa, ctx.problem->target.loss, mean, variance + transient);
  }
};

}  // namespace

Reachability explore_reachability(const SearchContext& ctx, const SelectionData& data, double eta,
                                  bool ignore_capacity, int max_epochs) {
  const Problem& problem = *ctx.problem;
  Reachability out;
  SelectionData view = data;  // a variant without placements gets a stand-in one
  if (ignore_capacity) {
    for (std::size_t v = 0; v < view.pareto.size(); ++v) {
      if (view.pareto[v].empty()) {
        view.pareto[v].push_back({0, std::max(1, problem.training.min_workers), 0, 0});
      }
    }
  }
  const LossGrid grid = make_grid(ctx, view, eta);
  // Cells over the whole range the variance takes: the graph's cover only what can still meet
  // the guarantee, and a target close to the floor makes them so fine (1e-8 where the variance
  // goes to 0.2) that every epoch of every path was a vertex of its own.
  const double variance_step = std::max(grid.variance_step, eta * grid.variance_top);
  const int levels = ctx.max_switches() + 1;
  const int horizon = ctx.horizon();
  int limit = std::max(horizon, 1) * kHorizonFactor;
  if (max_epochs >= 0) limit = std::min(limit, std::max(max_epochs, horizon));
  out.limit = limit;
  const LaterBound later(problem, view);
  std::vector<Node> nodes;
  std::deque<std::uint32_t> queue;
  VertexTable seen;
  std::size_t reported_bytes = 0;  // bytes reported to the budget
  // The working set after `nodes` grows to `capacity`, with room for the table to double.
  auto bytes = [&](std::size_t capacity) {
    return capacity * sizeof(Node) + queue.size() * sizeof(std::uint32_t) + 2 * seen.bytes();
  };
  // False (and `out.cut` set) when one more label would break the budget or the effort cap.
  auto room = [&]() {
    if (nodes.size() >= kMaxLabels) {
      out.cut = ReachabilityCut::Effort;
      return false;
    }
    const bool grows = nodes.size() == nodes.capacity();
    if (!grows && nodes.size() % kMemoryCheckEvery != 0) return true;
    // A vector that grows holds its old and its new buffer for a moment.
    const std::size_t capacity = grows ? std::max<std::size_t>(64, 2 * nodes.capacity()) : 0;
    const std::size_t need = bytes(nodes.capacity() + capacity);
    if (need > reported_bytes && !ctx.fits(need - reported_bytes)) {
      out.cut = ReachabilityCut::Memory;
      return false;
    }
    reported_bytes = std::max(reported_bytes, need);
    ctx.report_memory(MemoryUse::Explain, reported_bytes);
    if (grows) nodes.reserve(capacity);
    return true;
  };
  auto key = [&](const Node& n) {
    VertexKey k;
    k.layer = static_cast<std::uint32_t>(n.model * static_cast<std::size_t>(levels) + n.switches);
    k.mean_cell =
        static_cast<std::int32_t>(std::ceil((n.state.mean - grid.mean_base) / grid.mean_step));
    k.variance_cell = static_cast<std::int32_t>(std::ceil(n.state.variance / variance_step));
    return k;
  };
  // `same_vertex_ok`: an epoch that does not leave its parent's cell still moves the exact
  // state; without this, chains near convergence would stop one cell short of the floor.
  auto push = [&](Node n, bool same_vertex_ok = false) {
    const VertexKey k = key(n);
    if (seen.find(k) >= 0 && !same_vertex_ok) return;
    if (!room()) return;
    seen.settle(k, n.epochs);
    queue.push_back(static_cast<std::uint32_t>(nodes.size()));
    nodes.push_back(n);
  };
  auto start_phase = [&](std::uint32_t parent, std::size_t model, int switches, int sw,
                         LossState state, int epochs) {
    if (sw != kNone) {
      const Switch& s = problem.switching[static_cast<std::size_t>(sw)];
      state.mean += s.jump_mean;
      state.variance += s.jump_stddev * s.jump_stddev;
    }
    push({step(view.dynamics[model], state), parent, static_cast<std::uint16_t>(model),
          static_cast<std::uint16_t>(switches), epochs + 1, true});
  };
  for (std::size_t v = 0; v < view.pareto.size(); ++v) {
    if (view.pareto[v].empty()) continue;
    int switches = 0, sw = kNone;
    if (ctx.start_model != kNone && ctx.start_model != static_cast<int>(v)) {
      sw = ctx.switch_index[static_cast<std::size_t>(ctx.start_model)][v];
      if (sw == kNone || ctx.max_switches() < 1) continue;
      switches = 1;
    }
    start_phase(0xFFFFFFFFu, v, switches, sw, initial_state(ctx, v), 0);
  }
  std::uint32_t best = 0xFFFFFFFFu;
  bool open_at_limit = false;  // a state at the epoch cap from which the guarantee may be met
  while (!queue.empty() && out.cut == ReachabilityCut::None) {
    if (const BudgetStop stop = ctx.past_budget(); stop != BudgetStop::None) {
      out.cut = stop == BudgetStop::Cancelled ? ReachabilityCut::Cancelled : ReachabilityCut::Time;
      break;
    }
    const std::uint32_t i = queue.front();
    queue.pop_front();
    const Node n = nodes[i];
    if (n.epochs > horizon) {
      out.horizon_done = true;
      if (out.goal_epochs >= 0) break;  // breadth first: nothing shorter
    }
    const double variance = reported(view.dynamics[n.model], n.state);
    if (n.epochs <= horizon) {
      const double p = reach_probability(problem.target, n.state.mean, variance);
      if (best == 0xFFFFFFFFu || p > out.best_probability) {
        out.best_probability = p;
        best = i;
      }
    }
    if (meets(ctx.kappa, problem.target.loss, n.state.mean, variance)) {
      if (out.goal_epochs < 0 || n.epochs < out.goal_epochs) out.goal_epochs = n.epochs;
    }
    // Past the horizon only the fewest epochs that meet the guarantee are sought.
    if (n.epochs >= horizon &&
        !later.can_meet(ctx, n.state, levels - 1 - static_cast<int>(n.switches))) {
      continue;
    }
    if (n.epochs >= limit) {
      open_at_limit = true;
      continue;
    }
    Node next = n;
    next.state = step(view.dynamics[n.model], n.state);
    next.parent = i;
    next.epochs = n.epochs + 1;
    next.phase_start = false;
    push(next, key(next) == key(n));
    if (n.switches + 1 >= levels) continue;
    for (std::size_t w = 0; w < view.pareto.size(); ++w) {
      const int sw = ctx.switch_index[n.model][w];
      if (sw == kNone || view.pareto[w].empty()) continue;
      start_phase(i, w, n.switches + 1, sw, n.state, n.epochs);
    }
  }
  if (queue.empty() && out.cut == ReachabilityCut::None) out.horizon_done = true;
  // Both answers were settled before the cut: breadth first, the first goal has the fewest epochs.
  if (out.goal_epochs >= 0 && out.horizon_done) out.cut = ReachabilityCut::None;
  out.open_past_limit = out.goal_epochs < 0 && open_at_limit;
  ctx.report_memory(MemoryUse::Explain, 0);
  if (best != 0xFFFFFFFFu) {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t i = best; i != 0xFFFFFFFFu; i = nodes[i].parent) chain.push_back(i);
    Plan plan;
    plan.datasets = data.datasets;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const Node& n = nodes[*it];
      if (n.phase_start) {
        const Placement& p = view.pareto[n.model].front();
        plan.phases.push_back({n.model, 1, p.pool, p.workers});
      } else {
        ++plan.phases.back().epochs;
      }
    }
    out.best_plan = std::move(plan);
  }
  return out;
}

}  // namespace depl::solver::internal
