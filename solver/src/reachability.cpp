#include "reachability.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

#include "schedule_graph.hpp"
#include "vertex_table.hpp"

namespace depl::solver::internal {
namespace {

constexpr std::size_t kMaxLabels = 2'000'000;
constexpr int kHorizonFactor = 50;  // how far past the horizon to look for the guarantee

struct Node {
  LossState state;
  std::uint32_t parent = 0xFFFFFFFFu;
  std::uint16_t model = 0;
  std::uint16_t switches = 0;
  std::int32_t epochs = 0;
  bool phase_start = false;
};

}  // namespace

Reachability explore_reachability(const SearchContext& ctx, const SelectionData& data, double eta,
                                  bool ignore_capacity) {
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
  const int limit = std::max(horizon, 1) * kHorizonFactor;
  std::vector<Node> nodes;
  std::deque<std::uint32_t> queue;
  VertexTable seen;
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
    if (nodes.size() >= kMaxLabels) return;
    const VertexKey k = key(n);
    if (seen.find(k) >= 0 && !same_vertex_ok) return;
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
  while (!queue.empty()) {
    if (ctx.out_of_budget()) break;
    if (nodes.size() % 65536 == 0 &&
        !ctx.report_memory(MemoryUse::Explain, nodes.capacity() * sizeof(Node) +
                                                   queue.size() * sizeof(std::uint32_t) +
                                                   seen.size() * 2 * sizeof(VertexKey))) {
      break;
    }
    const std::uint32_t i = queue.front();
    queue.pop_front();
    const Node n = nodes[i];
    if (n.epochs > horizon && out.goal_epochs >= 0) break;  // breadth first: nothing shorter
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
    if (n.epochs >= limit) continue;
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
