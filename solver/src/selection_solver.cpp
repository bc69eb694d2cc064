#include "selection_solver.hpp"

#include <cmath>

namespace depl::solver::internal {
namespace {

constexpr int kGoalsTried = 8;       // goals re-checked before a search gives up
constexpr int kBisectionSteps = 12;  // lambda bisection, geometric

double weighted(const Weights& w, const Candidate& c) {
  return w.cost_weight * c.score.cost + w.time_weight * c.score.seconds;
}

}  // namespace

SelectionSolver::SelectionSolver(const SearchContext& ctx, double eta, SolveStats& stats)
    : ctx_(ctx), eta_(eta), stats_(stats) {}

const SelectionData& SelectionSolver::data(const std::vector<std::size_t>& datasets) {
  auto found = data_.find(datasets);
  if (found != data_.end()) return *found->second;
  auto data = std::make_unique<SelectionData>(make_selection_data(ctx_, datasets));
  for (const auto& p : data->pareto) stats_.placements += p.size();
  const std::size_t bytes = selection_data_bytes(*data);
  // Under a memory budget the memoised data are a cache: past a quarter of the budget the
  // others are dropped (and made again if needed). Callers hold on to one selection's data
  // at a time.
  const std::size_t limit = ctx_.meter ? ctx_.meter->budget().memory_bytes : 0;
  if (limit > 0 && data_bytes_ + bytes > limit / 4) {
    data_.clear();
    data_bytes_ = 0;
  }
  data_bytes_ += bytes;
  SelectionData& stored = *(data_[datasets] = std::move(data));
  report_memory();
  return stored;
}

std::optional<Candidate> SelectionSolver::search(const SelectionData& data, const Weights& weights,
                                                 double bound) {
  std::optional<Candidate> found;
  // Under a memory budget the indexes kept from earlier searches are given back once they
  // hold a quarter of it, rather than letting them end the solve.
  const std::size_t limit = ctx_.meter ? ctx_.meter->budget().memory_bytes : 0;
  if (limit > 0 && scratch_.index_bytes_kept() > limit / 4) scratch_.release_index();
  for (bool reexpand : {false, true}) {
    GraphOptions options;
    options.eta = eta_;
    options.weights = weights;
    options.fewer_epochs_reexpand = reexpand;
    options.weight_bound = bound;
    ScheduleSearch graph(ctx_, data, options, scratch_);
    for (int tries = 0; tries < kGoalsTried; ++tries) {
      std::optional<Plan> plan = graph.next_goal();
      if (!plan) break;
      Candidate c{*plan, score_plan(ctx_, data, *plan)};
      ++stats_.plans_checked;
      if (!acceptable(c.score, false)) continue;  // cannot happen if the rounding is sound
      if (!found || weighted(weights, c) < weighted(weights, *found)) found = std::move(c);
      break;
    }
    stats_.graph_states += graph.settled();
    // Only when the horizon cut an edge can the epoch-exact mode find something better.
    if (!graph.horizon_pruned()) break;
  }
  return found;
}

SelectionOutcome& SelectionSolver::cheapest(const std::vector<std::size_t>& datasets,
                                            double cost_bound) {
  auto it = outcomes_.find(datasets);
  if (it != outcomes_.end()) {
    SelectionOutcome& known = it->second;
    if (known.cheapest || (!known.cut && cost_bound <= known.cost_bound)) return known;
    if (ctx_.out_of_budget()) return known;
    known = SelectionOutcome{};  // bounded too tightly before, or cut short: search again
  }
  SelectionOutcome& out = outcomes_[datasets];
  out.datasets = datasets;
  out.cost_bound = cost_bound;
  if (ctx_.out_of_budget_now()) {
    out.cut = true;
    out.deadline_searched = true;
    return out;
  }
  report_memory();
  ++stats_.dataset_sets;
  const SelectionData& d = data(datasets);
  // Polishing only lowers the cost, so the bound applies to the raw plan with some slack.
  if (auto raw = search(d, Weights{1, 0}, cost_bound * 1.05)) {
    out.cheapest = polish(ctx_, d, *raw, false, stats_.plans_checked);
    if (!ctx_.problem->target.deadline_seconds) {
      out.best = out.cheapest;
      out.deadline_searched = true;
    } else if (out.cheapest->score.deadline) {
      out.best = out.cheapest;
    }
  } else {
    out.deadline_searched = true;  // nothing meets the guarantee: no deadline search to do
    out.cut = ctx_.out_of_budget();
  }
  return out;
}

std::size_t SelectionSolver::selection_data_bytes(const SelectionData& d) {
  std::size_t bytes = sizeof(SelectionData) + d.datasets.capacity() * sizeof(std::size_t) +
                      d.dynamics.capacity() * sizeof(VariantDynamics) +
                      d.staging_seconds.capacity() * sizeof(double);
  for (const auto& p : d.pareto) bytes += sizeof(p) + p.capacity() * sizeof(Placement);
  return bytes;
}

void SelectionSolver::report_memory() {
  // An outcome holds up to three small plans besides its key.
  constexpr std::size_t kOutcomeBytes = 512;
  const std::size_t per_key = ctx_.problem->datasets.size() * sizeof(std::size_t);
  ctx_.report_memory(MemoryUse::Selections,
                     data_bytes_ + outcomes_.size() * (kOutcomeBytes + 2 * per_key));
}

void SelectionSolver::consider_for_deadline(const SelectionData& d, const Candidate& raw,
                                            SelectionOutcome& out) {
  std::optional<Candidate> fit;
  if (raw.score.deadline) {
    fit = raw;
  } else {
    fit = refine_placements(ctx_, d, raw.plan, true, stats_.plans_checked);
  }
  if (!fit) return;
  Candidate polished = polish(ctx_, d, *fit, true, stats_.plans_checked);
  if (!out.best || better(polished, *out.best)) out.best = std::move(polished);
}

SelectionOutcome& SelectionSolver::with_fastest(const std::vector<std::size_t>& datasets) {
  SelectionOutcome& out = cheapest(datasets);
  if (out.fastest || !out.cheapest || ctx_.out_of_budget()) return out;
  const SelectionData& d = data(datasets);
  out.fastest = search(d, Weights{0, 1});
  if (out.fastest && out.cheapest->score.seconds < out.fastest->score.seconds) {
    out.fastest = out.cheapest;  // rounding can make the time search miss; keep the faster
  }
  return out;
}

SelectionOutcome& SelectionSolver::with_deadline(const std::vector<std::size_t>& datasets) {
  SelectionOutcome& out = cheapest(datasets);
  if (out.deadline_searched || ctx_.out_of_budget()) return out;
  out.deadline_searched = true;
  const SelectionData& d = data(datasets);
  const double deadline = *ctx_.problem->target.deadline_seconds;
  // The cheapest plan may only need faster placements.
  consider_for_deadline(d, *out.cheapest, out);
  with_fastest(datasets);
  if (!out.fastest || out.fastest->score.seconds > deadline) return out;  // deadline binds
  consider_for_deadline(d, *out.fastest, out);

  // lambda in currency per second; the cheapest plan's average spend rate sets the scale.
  const Candidate& c0 = *out.cheapest;
  const double scale =
      c0.score.seconds > 0 ? std::max(c0.score.cost / c0.score.seconds, 1e-12) : 1.0;
  auto run = [&](double lambda) {
    if (ctx_.out_of_budget()) return true;  // stop the bisection where it is
    std::optional<Candidate> c = search(d, Weights{1, lambda});
    if (c) consider_for_deadline(d, *c, out);
    return c && c->score.seconds <= deadline;
  };
  double hi = scale;
  double lo = 0;
  int grow = 0;
  while (!run(hi)) {
    lo = hi;
    hi *= 4;
    if (++grow > 24) return out;  // the fastest plan above stands
  }
  if (lo == 0) lo = hi / 1024;
  for (int i = 0; i < kBisectionSteps && hi / lo > 1.01; ++i) {
    const double mid = std::sqrt(lo * hi);
    if (run(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return out;
}

}  // namespace depl::solver::internal
