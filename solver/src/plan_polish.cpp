#include "plan_polish.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace depl::solver::internal {

bool better(const Candidate& a, const Candidate& b) {
  return better_plan(a.score.cost, a.score.seconds, a.plan.phases.size(), b.score.cost,
                     b.score.seconds, b.plan.phases.size());
}

bool acceptable(const Score& s, bool respect_deadline) {
  return s.structural && s.guarantee && (!respect_deadline || s.deadline);
}

namespace {

// Fixed seconds of phase i (startup, staging unless the pool is kept, switch overhead).
double fixed_seconds(const SearchContext& ctx, const SelectionData& data, const Plan& plan,
                     std::size_t i, int previous_pool, const Placement& placement) {
  const Problem& problem = *ctx.problem;
  const std::size_t pool = placement.pool;
  if (problem.continues_start(i, plan.phases[i].model, pool, placement.workers)) return 0.0;
  double tau = 0;
  const int previous_model = i == 0 ? ctx.start_model : static_cast<int>(plan.phases[i - 1].model);
  if (previous_model != kNone && previous_model != static_cast<int>(plan.phases[i].model)) {
    const int sw = ctx.switch_index[static_cast<std::size_t>(previous_model)][plan.phases[i].model];
    if (sw != kNone) tau = problem.switching[static_cast<std::size_t>(sw)].overhead_seconds;
  }
  return problem.pools[pool].startup_seconds +
         (previous_pool != static_cast<int>(pool) ? data.staging_seconds[pool] : 0.0) + tau;
}

struct Choice {
  double cost = std::numeric_limits<double>::infinity();
  double seconds = std::numeric_limits<double>::infinity();
  int previous = kNone;   // DP back-pointer: pool of the phase before
  int placement = kNone;  // index into data.pareto[model]
};

// Without a deadline phases interact only through the pool kept from one phase to the next, so
// a dynamic programme over (phase, pool) is exact.
std::optional<Plan> cheapest_assignment(const SearchContext& ctx, const SelectionData& data,
                                        const Plan& plan) {
  const std::size_t pools = ctx.problem->pools.size();
  const std::size_t phases = plan.phases.size();
  std::vector<std::vector<Choice>> table(phases, std::vector<Choice>(pools));
  for (std::size_t i = 0; i < phases; ++i) {
    const Phase& ph = plan.phases[i];
    const auto& options = data.pareto[ph.model];
    const std::size_t sources = i == 0 ? 1 : pools;
    for (std::size_t src = 0; src < sources; ++src) {
      const int previous_pool = i == 0 ? ctx.start_pool : static_cast<int>(src);
      double base_cost = 0, base_seconds = 0;
      if (i > 0) {
        if (!std::isfinite(table[i - 1][src].cost)) continue;
        base_cost = table[i - 1][src].cost;
        base_seconds = table[i - 1][src].seconds;
      }
      for (std::size_t pi = 0; pi < options.size(); ++pi) {
        const Placement& p = options[pi];
        const double seconds =
            fixed_seconds(ctx, data, plan, i, previous_pool, p) + ph.epochs * p.epoch_seconds;
        const double cost = base_cost + p.rate * seconds;
        Choice& slot = table[i][p.pool];
        if (better_plan(cost, base_seconds + seconds, 0, slot.cost, slot.seconds, 0)) {
          slot = {cost, base_seconds + seconds, static_cast<int>(src), static_cast<int>(pi)};
        }
      }
    }
  }
  int best_pool = kNone;
  for (std::size_t k = 0; k < pools; ++k) {
    const Choice& c = table[phases - 1][k];
    if (!std::isfinite(c.cost)) continue;
    if (best_pool == kNone ||
        better_plan(c.cost, c.seconds, 0,
                    table[phases - 1][static_cast<std::size_t>(best_pool)].cost,
                    table[phases - 1][static_cast<std::size_t>(best_pool)].seconds, 0)) {
      best_pool = static_cast<int>(k);
    }
  }
  if (best_pool == kNone) return std::nullopt;
  Plan out = plan;
  int pool = best_pool;
  for (std::size_t i = phases; i-- > 0;) {
    const Choice& c = table[i][static_cast<std::size_t>(pool)];
    const Placement& p = data.pareto[plan.phases[i].model][static_cast<std::size_t>(c.placement)];
    out.phases[i].pool = p.pool;
    out.phases[i].workers = p.workers;
    pool = c.previous;
  }
  return out;
}

// With a deadline: exhaustive over Pareto placements per phase, pruned by cost and time bounds.
class DeadlineAssignment {
 public:
  DeadlineAssignment(const SearchContext& ctx, const SelectionData& data, const Plan& plan)
      : ctx_(ctx), data_(data), plan_(plan), current_(plan) {
    const std::size_t phases = plan.phases.size();
    rest_cost_.assign(phases + 1, 0);
    rest_seconds_.assign(phases + 1, 0);
    for (std::size_t i = phases; i-- > 0;) {
      double c = std::numeric_limits<double>::infinity(), s = c;
      for (const Placement& p : data.pareto[plan.phases[i].model]) {
        // A lower bound: a re-plan's first phase may continue the running one (no startup).
        const double startup = i == 0 && ctx.has_start ? 0.0 : ctx.problem->pools[p.pool].startup_seconds;
        const double sec = startup + plan.phases[i].epochs * p.epoch_seconds;
        c = std::min(c, p.rate * sec);
        s = std::min(s, sec);
      }
      rest_cost_[i] = rest_cost_[i + 1] + c;
      rest_seconds_[i] = rest_seconds_[i + 1] + s;
    }
  }

  std::optional<Plan> run() {
    visit(0, ctx_.start_pool, 0, 0);
    return best_;
  }

 private:
  void visit(std::size_t i, int previous_pool, double cost, double seconds) {
    const double deadline = *ctx_.problem->target.deadline_seconds;
    if (seconds + rest_seconds_[i] > deadline * (1 + 1e-12)) return;
    if (best_ && cost + rest_cost_[i] > best_cost_ * (1 + 1e-9)) return;
    if (i == plan_.phases.size()) {
      if (!best_ || better_plan(cost, seconds, 0, best_cost_, best_seconds_, 0)) {
        best_ = current_;
        best_cost_ = cost;
        best_seconds_ = seconds;
      }
      return;
    }
    const Phase& ph = plan_.phases[i];
    for (const Placement& p : data_.pareto[ph.model]) {
      const double sec =
          fixed_seconds(ctx_, data_, plan_, i, previous_pool, p) + ph.epochs * p.epoch_seconds;
      current_.phases[i].pool = p.pool;
      current_.phases[i].workers = p.workers;
      visit(i + 1, static_cast<int>(p.pool), cost + p.rate * sec, seconds + sec);
    }
  }

  const SearchContext& ctx_;
  const SelectionData& data_;
  const Plan& plan_;
  Plan current_;
  std::vector<double> rest_cost_, rest_seconds_;
  std::optional<Plan> best_;
  double best_cost_ = 0, best_seconds_ = 0;
};

}  // namespace

std::optional<Candidate> refine_placements(const SearchContext& ctx, const SelectionData& data,
                                           const Plan& plan, bool respect_deadline,
                                           std::size_t& plans_checked) {
  for (const Phase& ph : plan.phases) {
    if (data.pareto[ph.model].empty()) return std::nullopt;
  }
  std::optional<Plan> assigned;
  if (respect_deadline && ctx.problem->target.deadline_seconds) {
    double combos = 1;
    for (const Phase& ph : plan.phases) combos *= static_cast<double>(data.pareto[ph.model].size());
    if (combos <= 200'000) {
      assigned = DeadlineAssignment(ctx, data, plan).run();
    } else {
      assigned = cheapest_assignment(ctx, data, plan);
    }
  } else {
    assigned = cheapest_assignment(ctx, data, plan);
  }
  if (!assigned) return std::nullopt;
  Candidate c{*assigned, score_plan(ctx, data, *assigned)};
  ++plans_checked;
  if (!acceptable(c.score, respect_deadline)) return std::nullopt;
  return c;
}

Candidate polish(const SearchContext& ctx, const SelectionData& data, Candidate best,
                 bool respect_deadline, std::size_t& plans_checked) {
  auto try_plan = [&](const Plan& plan) {
    Candidate c{plan, score_plan(ctx, data, plan)};
    ++plans_checked;
    if (acceptable(c.score, respect_deadline) && better(c, best)) {
      best = std::move(c);
      return true;
    }
    return false;
  };
  for (int round = 0; round < 32; ++round) {
    bool improved = false;
    if (auto refined = refine_placements(ctx, data, best.plan, respect_deadline, plans_checked);
        refined && better(*refined, best)) {
      best = std::move(*refined);
      improved = true;
    }
    const std::size_t phases = best.plan.phases.size();
    for (std::size_t i = 0; i < phases; ++i) {
      while (best.plan.phases[i].epochs > 1) {
        Plan p = best.plan;
        --p.phases[i].epochs;
        if (!try_plan(p)) break;
        improved = true;
      }
    }
    for (std::size_t i = 0; i < phases; ++i) {
      for (std::size_t j = 0; j < phases; ++j) {
        if (i == j || best.plan.phases[i].epochs <= 1) continue;
        Plan p = best.plan;
        --p.phases[i].epochs;
        ++p.phases[j].epochs;
        improved |= try_plan(p);
      }
    }
    if (!improved) break;
  }
  return best;
}

}  // namespace depl::solver::internal
