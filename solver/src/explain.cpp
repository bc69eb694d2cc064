#include "explain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reachability.hpp"

namespace depl::solver::internal {

std::string human_duration(double seconds) {
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f} min", seconds / 60);
  if (seconds < 172800) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} days", seconds / 86400);
}

std::string probability_text(double p) {
  if (p >= 1.0 || p <= 0.0) return fmt::format("{}", p);
  if (p < 0.001) return fmt::format("{:.3g}", p);
  for (int decimals = 3; decimals < 17; ++decimals) {
    std::string text = fmt::format("{:.{}f}", p, decimals);
    if (text != fmt::format("{:.{}f}", 1.0, decimals) &&
        text != fmt::format("{:.{}f}", 0.0, decimals)) {
      return text;
    }
  }
  return fmt::format("{}", p);
}

namespace {

constexpr double kExplainEtaFloor = 0.005;  // reachability needs no fine grid
constexpr std::size_t kReachabilitySelections = 8;

void set_plan(const Problem& problem, const Plan& plan, SolveResult& result) {
  result.plan = plan;
  result.figures = evaluate(problem, plan);
}

// Why an exploration was cut, for the reason's last sentence.
const char* cut_text(ReachabilityCut cut) {
  switch (cut) {
    case ReachabilityCut::Time:
      return "the solve's time budget ran out during it";
    case ReachabilityCut::Cancelled:
      return "the solve was cancelled during it";
    case ReachabilityCut::Memory:
      return "it reached the solve's memory budget";
    case ReachabilityCut::Effort:
      return "it reached its effort cap";
    case ReachabilityCut::None:
      break;
  }
  return "";
}

// The reason's explanation and, when a search behind it was cut, the fact that it is incomplete.
void explained(ReachabilityCut cut, std::string reason, SolveResult& result) {
  if (cut != ReachabilityCut::None) {
    result.infeasibility.complete = false;
    reason += fmt::format(
        " The search behind this explanation was cut ({}): it states what was found by then.",
        cut_text(cut));
  }
  result.reason = std::move(reason);
}

void explain_unreachable(const SearchContext& ctx, const SearchFindings& findings, double eta,
                         SolveResult& result) {
  const Problem& problem = *ctx.problem;
  Infeasibility& inf = result.infeasibility;
  const double coarse = std::max(eta, kExplainEtaFloor);
  std::vector<std::vector<std::size_t>> selections;
  std::vector<std::size_t> all(problem.datasets.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  selections.push_back(all);
  for (const auto& d : findings.selections) {
    if (selections.size() >= kReachabilitySelections) break;
    if (d != all) selections.push_back(d);
  }
  int goal_epochs = -1;
  ReachabilityCut cut = ReachabilityCut::None;
  int open_past = 0;  // epochs past which the guarantee might be met (0: none)
  for (const auto& d : selections) {
    const SelectionData data = make_selection_data(ctx, d);
    const Reachability r = explore_reachability(ctx, data, coarse, false, goal_epochs);
    if (cut == ReachabilityCut::None) cut = r.cut;
    if (r.open_past_limit) open_past = std::max(open_past, r.limit);
    if (r.best_plan && (result.plan.phases.empty() || r.best_probability > inf.best_probability)) {
      inf.best_probability = r.best_probability;
      set_plan(problem, *r.best_plan, result);
      inf.best_probability = result.figures.probability;
    }
    if (r.goal_epochs >= 0 && (goal_epochs < 0 || r.goal_epochs < goal_epochs)) {
      goal_epochs = r.goal_epochs;
    }
    // The time or the solve is over: the next selections would be cut at once.
    if (r.cut == ReachabilityCut::Time || r.cut == ReachabilityCut::Cancelled) break;
  }
  if (findings.best_probability_plan) {
    set_plan(problem, *findings.best_probability_plan, result);
    inf.best_probability = result.figures.probability;
  }
  const double p = problem.target.probability;
  const double loss = problem.target.loss;
  const int horizon = problem.training.max_epochs;
  if (goal_epochs > horizon) {
    inf.binding = "horizon";
    explained(
        cut,
        fmt::format("Reaching loss {:.4g} with probability {} needs about {} epochs, more "
                    "than maxEpochs {} (the best within {} epochs is P = {}).",
                    loss, p, goal_epochs, horizon, horizon, probability_text(inf.best_probability)),
        result);
    return;
  }
  if (goal_epochs >= 0 && goal_epochs <= horizon) {
    inf.binding = "guarantee";
    explained(cut,
              fmt::format("The schedule graph found no plan meeting the guarantee at eta = {}, "
                          "yet one looks reachable within {} epochs (P = {}); the grid is too "
                          "coarse, use a smaller eta.",
                          eta, horizon, probability_text(inf.best_probability)),
              result);
    return;
  }
  bool some_unplaceable = false;
  for (bool placeable : ctx.placeable) some_unplaceable |= !placeable;
  if (some_unplaceable && cut != ReachabilityCut::Time && cut != ReachabilityCut::Cancelled) {
    const SelectionData data = make_selection_data(ctx, all);
    const Reachability r = explore_reachability(ctx, data, coarse, true);
    if (r.goal_epochs >= 0) {
      inf.binding = "capacity";
      explained(cut,
                fmt::format("Only model variants that no pool has room for (GPUs per worker x "
                            "workers) could reach loss {:.4g} with probability {}; with the "
                            "variants that fit, the best is P = {}.",
                            loss, p, probability_text(inf.best_probability)),
                result);
      return;
    }
    if (cut == ReachabilityCut::None) cut = r.cut;
  }
  inf.binding = "guarantee";
  if (open_past > 0) {
    explained(cut,
              fmt::format("No schedule reaches loss {:.4g} with probability {} within {} epochs, "
                          "even without a deadline or budget: the best within {} epochs is P = "
                          "{}.",
                          loss, p, open_past, horizon, probability_text(inf.best_probability)),
              result);
    return;
  }
  if (cut != ReachabilityCut::None) {
    explained(cut,
              fmt::format("No schedule found reaches loss {:.4g} with probability {}: the best "
                          "within {} epochs is P = {}.",
                          loss, p, horizon, probability_text(inf.best_probability)),
              result);
    return;
  }
  result.reason = fmt::format(
      "No schedule reaches loss {:.4g} with probability {}, even without a deadline or "
      "budget: the best within {} epochs is P = {}.",
      loss, p, horizon, probability_text(inf.best_probability));
}

}  // namespace

void explain_infeasible(const SearchContext& ctx, const SearchFindings& findings, double eta,
                        SolveResult& result) {
  const Problem& problem = *ctx.problem;
  result.feasible = false;
  Infeasibility& inf = result.infeasibility;
  bool any_placeable = false;
  for (bool placeable : ctx.placeable) any_placeable |= placeable;
  if (!any_placeable) {
    inf.binding = "capacity";
    result.reason =
        "No pool has room for any model variant: every (pool, workers) placement needs more GPUs "
        "than are free or breaks the worker limits.";
    result.plan = {};
    result.figures = {};
    return;
  }
  if (!findings.cheapest) {
    explain_unreachable(ctx, findings, eta, result);
    return;
  }
  const Candidate& cheapest = *findings.cheapest;
  const Candidate& fastest = findings.fastest ? *findings.fastest : cheapest;
  inf.least_cost = cheapest.score.cost;
  inf.least_seconds = std::min(fastest.score.seconds, cheapest.score.seconds);
  const auto& target = problem.target;
  const Candidate* shown = &cheapest;
  if (target.deadline_seconds && inf.least_seconds > *target.deadline_seconds) {
    inf.binding = "deadline";
    shown = &fastest;
    result.reason = fmt::format(
        "The fastest plan found that meets the guarantee takes {}, more than the deadline of {}.",
        human_duration(inf.least_seconds), human_duration(*target.deadline_seconds));
  } else if (target.budget && inf.least_cost > *target.budget) {
    inf.binding = "budget";
    result.reason = fmt::format(
        "The cheapest plan found that meets the guarantee costs {:.2f}, more than the budget of "
        "{:.2f}.",
        inf.least_cost, *target.budget);
  } else {
    inf.binding = "budget";
    if (findings.deadline_best) shown = &*findings.deadline_best;
    result.reason = fmt::format(
        "The deadline and the budget cannot both be met: plans found within {} cost at least "
        "{:.2f}, more than the budget of {:.2f}.",
        human_duration(target.deadline_seconds.value_or(0)),
        findings.deadline_best ? findings.deadline_best->score.cost : inf.least_cost,
        target.budget.value_or(0));
  }
  set_plan(problem, shown->plan, result);
  inf.best_probability = result.figures.probability;
  for (const Candidate* c : {&cheapest, &fastest}) {
    inf.best_probability =
        std::max(inf.best_probability, reach_probability(target, c->score.mean, c->score.variance));
  }
}

}  // namespace depl::solver::internal
