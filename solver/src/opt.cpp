// OPT (docs/depl-model.md section 4): exhaustive over dataset subsets x variant sequences x
// epoch splits x (pool, workers) per phase, scored with the evaluator's arithmetic. Pruning uses
// only provable bounds: the guarantee does not depend on placements (so a split that misses it is
// skipped before placements are enumerated), and a prefix whose cost lower bound already exceeds
// the best feasible plan cannot lead to a better one.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms.hpp"
#include "explain.hpp"
#include "plan_scorer.hpp"

namespace depl::solver::internal {
namespace {

constexpr std::size_t kMaxDatasetsForOpt = 30;

// Number of epoch splits of P phases (each >= 1) with total <= H: C(H, P).
double splits(int horizon, int phases) {
  double c = 1;
  for (int i = 0; i < phases; ++i) c = c * (horizon - i) / (i + 1);
  return std::max(0.0, c);
}

// Candidate plans OPT would enumerate: every subset x sequence x split x placement tuple.
double count_plans(const SearchContext& ctx, const std::vector<double>& placements) {
  const Problem& problem = *ctx.problem;
  const std::size_t nv = problem.models.size();
  const int levels = ctx.max_switches() + 1;
  // ways[v][s]: sum over sequences of the current length ending in v with s switches of the
  // product of placement counts.
  std::vector<std::vector<double>> ways(nv, std::vector<double>(static_cast<std::size_t>(levels)));
  for (std::size_t v = 0; v < nv; ++v) {
    if (ctx.start_model == kNone || ctx.start_model == static_cast<int>(v)) {
      ways[v][0] = placements[v];
    } else if (levels > 1 &&
               ctx.switch_index[static_cast<std::size_t>(ctx.start_model)][v] != kNone) {
      ways[v][1] = placements[v];
    }
  }
  double total = 0;
  for (int length = 1; length <= levels && length <= ctx.horizon(); ++length) {
    double sum = 0;
    for (const auto& row : ways)
      for (double w : row) sum += w;
    total += sum * splits(ctx.horizon(), length);
    std::vector<std::vector<double>> next(nv,
                                          std::vector<double>(static_cast<std::size_t>(levels)));
    for (std::size_t v = 0; v < nv; ++v)
      for (int s = 0; s + 1 < levels; ++s)
        for (std::size_t w = 0; w < nv; ++w)
          if (ctx.switch_index[v][w] != kNone) {
            next[w][static_cast<std::size_t>(s + 1)] +=
                ways[v][static_cast<std::size_t>(s)] * placements[w];
          }
    ways = std::move(next);
  }
  const double subsets = std::pow(2.0, static_cast<double>(problem.datasets.size())) - 1;
  return total * subsets;
}

class Exhaustive {
 public:
  Exhaustive(const SearchContext& ctx, SolveStats& stats) : ctx_(ctx), stats_(stats) {}

  void run_selection(const std::vector<std::size_t>& datasets) {
    data_ = make_selection_data(ctx_, datasets);
    const Problem& problem = *ctx_.problem;
    placements_.assign(problem.models.size(), {});
    fixed_lb_.assign(problem.models.size(), 0);
    epoch_lb_.assign(problem.models.size(), 0);
    for (std::size_t v = 0; v < problem.models.size(); ++v) {
      placements_[v] = feasible_placements(problem, v, data_.samples);
      double f = std::numeric_limits<double>::infinity(), e = f;
      for (const Placement& p : placements_[v]) {
        // A re-plan may continue the running phase without startup: then the bound is 0.
        f = std::min(f, problem.start ? 0.0 : p.rate * problem.pools[p.pool].startup_seconds);
        e = std::min(e, p.rate * p.epoch_seconds);
      }
      fixed_lb_[v] = f;
      epoch_lb_[v] = e;
      stats_.placements += placements_[v].size();
    }
    ++stats_.dataset_sets;
    current_ = Plan{datasets, {}};
    extend(LossState{}, 0, 0, 0.0);
  }

  SearchFindings findings;
  std::optional<Candidate> best;  // meets everything

 private:
  // Lower bound on the cost of a phase of `epochs` epochs of v (no staging, no switch).
  double phase_lb(std::size_t v, int epochs) const {
    return (fixed_lb_[v] + epochs * epoch_lb_[v]) * (1 - 1e-12);
  }
  bool pruned(double lb) const { return best && lb > best->score.cost * (1 + 1e-9); }

  void extend(LossState before, int epochs_used, int switches, double lb_prefix) {
    if (ctx_.out_of_budget()) return;
    const Problem& problem = *ctx_.problem;
    const std::size_t i = current_.phases.size();
    const int previous = i == 0 ? ctx_.start_model : static_cast<int>(current_.phases.back().model);
    for (std::size_t v = 0; v < problem.models.size(); ++v) {
      if (placements_[v].empty()) continue;
      if (i > 0 && previous == static_cast<int>(v)) continue;
      LossState state = i == 0 ? initial_state(ctx_, v) : before;
      int used = switches;
      if (previous != kNone && previous != static_cast<int>(v)) {
        const int sw = ctx_.switch_index[static_cast<std::size_t>(previous)][v];
        if (sw == kNone || switches + 1 > ctx_.max_switches()) continue;
        const Switch& s = problem.switching[static_cast<std::size_t>(sw)];
        state.mean += s.jump_mean;
        state.variance += s.jump_stddev * s.jump_stddev;
        used = switches + 1;
      }
      current_.phases.push_back({v, 0, 0, 0});
      for (int e = 1; epochs_used + e <= ctx_.horizon(); ++e) {
        state = step(data_.dynamics[v], state);
        const double lb = lb_prefix + phase_lb(v, e);
        if (pruned(lb)) break;  // later splits only cost more
        current_.phases.back().epochs = e;
        track_probability(state, data_.dynamics[v]);
        if (meets(ctx_.kappa, problem.target.loss, state.mean, reported(data_.dynamics[v], state))) {
          assign_placements(state);
        }
        extend(state, epochs_used + e, used, lb);
      }
      current_.phases.pop_back();
    }
  }

  void track_probability(const LossState& state, const VariantDynamics& d) {
    const double p = reach_probability(ctx_.problem->target, state.mean, reported(d, state));
    if (!findings.best_probability_plan || p > best_probability_) {
      best_probability_ = p;
      Plan plan = current_;
      for (Phase& ph : plan.phases) {
        ph.pool = placements_[ph.model].front().pool;
        ph.workers = placements_[ph.model].front().workers;
      }
      findings.best_probability_plan = std::move(plan);
    }
  }

  void assign_placements(const LossState& final_state) {
    const std::size_t phases = current_.phases.size();
    rest_lb_.assign(phases + 1, 0);
    for (std::size_t j = phases; j-- > 0;) {
      rest_lb_[j] = rest_lb_[j + 1] + phase_lb(current_.phases[j].model, current_.phases[j].epochs);
    }
    final_ = final_state;
    place(0, ctx_.start_pool, 0, 0);
  }

  void place(std::size_t j, int previous_pool, double cost, double seconds) {
    if (ctx_.out_of_budget()) return;
    const Problem& problem = *ctx_.problem;
    if (pruned(cost + rest_lb_[j])) return;
    if (j == current_.phases.size()) {
      leaf(cost, seconds);
      return;
    }
    Phase& ph = current_.phases[j];
    const ModelVariant& model = problem.models[ph.model];
    const int previous_model =
        j == 0 ? ctx_.start_model : static_cast<int>(current_.phases[j - 1].model);
    double tau = 0;
    if (previous_model != kNone && previous_model != static_cast<int>(ph.model)) {
      tau = problem
                .switching[static_cast<std::size_t>(
                    ctx_.switch_index[static_cast<std::size_t>(previous_model)][ph.model])]
                .overhead_seconds;
    }
    for (const Placement& p : placements_[ph.model]) {
      const Pool& pool = problem.pools[p.pool];
      const bool continues = problem.continues_start(j, ph.model, p.pool, p.workers);
      const double staging = !continues && previous_pool != static_cast<int>(p.pool)
                                 ? data_.staging_seconds[p.pool]
                                 : 0.0;
      const double startup = continues ? 0.0 : pool.startup_seconds;
      // The evaluator's expressions, in its order.
      const double phase_s = startup + staging + tau + ph.epochs * p.epoch_seconds;
      const double n = p.workers;
      const double phase_cost =
          n * model.gpus_per_worker * pool.price_per_gpu_hour * phase_s / 3600.0;
      ph.pool = p.pool;
      ph.workers = p.workers;
      place(j + 1, static_cast<int>(p.pool), cost + phase_cost, seconds + phase_s);
    }
  }

  void leaf(double cost, double seconds) {
    ++stats_.plans_checked;
    const Target& t = ctx_.problem->target;
    Candidate c{current_, Score{}};
    c.score.structural = true;
    c.score.guarantee = true;
    c.score.cost = cost;
    c.score.seconds = seconds;
    c.score.mean = final_.mean;
    c.score.variance = reported(data_.dynamics[current_.phases.back().model], final_);
    c.score.deadline = !t.deadline_seconds || seconds <= *t.deadline_seconds;
    c.score.budget = !t.budget || cost <= *t.budget;
    if (t.deadline_seconds && interrupted_ && c.score.deadline) {
      // The deadline is a chance constraint that takes its share of the promise, and the
      // guarantee above was met at p, a relaxation of p / P_time: the exact score, for the plans
      // that could become the best (Chernoff's bound is not cheap; the others cannot be chosen).
      if (!best || better(c, *best)) {
        c.score = score_plan(ctx_, data_, current_);
      } else {
        c.score.deadline = false;
      }
    }
    if (!findings.cheapest || better(c, *findings.cheapest)) findings.cheapest = c;
    if (!findings.fastest || seconds < findings.fastest->score.seconds) findings.fastest = c;
    if (c.score.deadline && (!findings.deadline_best || better(c, *findings.deadline_best))) {
      findings.deadline_best = c;
    }
    if (c.score.feasible() && (!best || better(c, *best))) best = std::move(c);
  }

  const SearchContext& ctx_;
  SolveStats& stats_;
  // Some pool is interrupted (docs/depl-model.md section 2).
  bool interrupted_ = std::any_of(ctx_.problem->pools.begin(), ctx_.problem->pools.end(),
                                  [](const Pool& p) { return p.interruptions_per_hour > 0; });
  SelectionData data_;
  std::vector<std::vector<Placement>> placements_;
  std::vector<double> fixed_lb_, epoch_lb_, rest_lb_;
  Plan current_;
  LossState final_;
  double best_probability_ = 0;
};

}  // namespace

Expected<SolveResult> solve_opt(const Problem& problem, const SolveOptions& options,
                                BudgetMeter& meter) {
  const SearchContext ctx = make_context(problem, guarantee_kappa(problem.target), &meter);
  const std::size_t nd = problem.datasets.size();
  std::vector<double> counts(problem.models.size());
  for (std::size_t v = 0; v < counts.size(); ++v) {
    counts[v] = static_cast<double>(feasible_placements(problem, v, 1.0).size());
  }
  const double plans =
      nd > kMaxDatasetsForOpt ? std::numeric_limits<double>::infinity() : count_plans(ctx, counts);
  if (plans > static_cast<double>(options.opt_max_plans)) {
    return error(
        fmt::format("opt: the instance has {:.3g} candidate plans, more than the limit of {} "
                    "(opt_max_plans); OPT is for small instances, use the depl algorithm",
                    plans, options.opt_max_plans));
  }
  SolveResult result;
  result.algorithm = Algorithm::Opt;
  Exhaustive search(ctx, result.stats);
  const std::size_t all_mask = (std::size_t{1} << nd) - 1;
  for (std::size_t mask = problem.fixed_datasets ? all_mask : 1;
       mask <= all_mask && !ctx.out_of_budget(); ++mask) {
    std::vector<std::size_t> d;
    for (std::size_t i = 0; i < nd; ++i) {
      if (mask & (std::size_t{1} << i)) d.push_back(i);
    }
    search.run_selection(d);
  }
  if (search.best) {
    result.plan = search.best->plan;
    result.figures = evaluate(problem, result.plan);
    result.feasible = result.figures.feasible;
    if (result.feasible) return result;
  }
  explain_infeasible(ctx, search.findings, options.eta, result);
  return result;
}

}  // namespace depl::solver::internal
