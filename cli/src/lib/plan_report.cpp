#include "depl/cli/plan_report.hpp"

#include <fmt/format.h>
#include <cmath>

#include "depl/cli/human_units.hpp"
#include "depl/cli/text_table.hpp"
#include "depl/solver/evaluator.hpp"

namespace depl::cli {

using nlohmann::json;
using solver::Figures;
using solver::Problem;
using solver::SolveResult;

const char* guarantee_name(solver::Guarantee guarantee) {
  return guarantee == solver::Guarantee::DistributionFree ? "DistributionFree" : "Gaussian";
}

bool plan_is_feasible(const Problem& problem, const SolveResult& result) {
  return result.feasible && solver::evaluate(problem, result.plan).feasible;
}

namespace {

json target_json(const solver::Target& target) {
  json j = {{"loss", target.loss},
            {"probability", target.probability},
            {"guarantee", guarantee_name(target.guarantee)}};
  if (target.deadline_seconds) j["deadlineSeconds"] = *target.deadline_seconds;
  if (target.budget) j["budget"] = *target.budget;
  return j;
}

// Figures of a plan the solver returned; an empty or malformed plan yields the evaluator's
// zero figures and its structural violations.
bool walkable(const Figures& figures, const solver::Plan& plan) {
  return !plan.phases.empty() && figures.phases.size() == plan.phases.size();
}

}  // namespace

json plan_to_json(const Problem& problem, const SolveResult& result,
                  std::optional<SolveTiming> timing) {
  const Figures figures = solver::evaluate(problem, result.plan);
  const bool can_walk = walkable(figures, result.plan);
  json out;
  // The solver's verdict must also be the evaluator's; both have to say yes.
  out["feasible"] = result.feasible && figures.feasible;
  out["algorithm"] = solver::to_string(result.algorithm);

  json datasets = json::array();
  for (std::size_t d : result.plan.datasets) {
    if (d < problem.datasets.size()) datasets.push_back(problem.datasets[d].name);
  }
  out["datasets"] = datasets;
  if (can_walk) {
    // E (clean samples weighted by quality) and W / N, what the loss model trains on.
    out["effectiveSamples"] = solver::effective_samples(problem, result.plan.datasets);
    out["wrongLabelShare"] = solver::wrong_label_share(problem, result.plan.datasets);
  }

  json phases = json::array();
  if (can_walk) {
    int epoch = 0;
    for (std::size_t i = 0; i < result.plan.phases.size(); ++i) {
      const solver::Phase& ph = result.plan.phases[i];
      const solver::PhaseFigures& pf = figures.phases[i];
      const solver::ModelVariant& model = problem.models[ph.model];
      const solver::Pool& pool = problem.pools[ph.pool];
      phases.push_back({{"model", model.name},
                        {"epochs", ph.epochs},
                        {"pool", pool.name},
                        {"workers", ph.workers},
                        {"gpusPerWorker", model.gpus_per_worker},
                        {"gpus", ph.workers * model.gpus_per_worker},
                        {"gpuType", pool.gpu_type},
                        {"image", model.image},
                        {"startEpoch", epoch},
                        {"epochSeconds", pf.epoch_seconds},
                        {"computeSeconds", pf.compute_seconds},
                        {"commSeconds", pf.comm_seconds},
                        {"startupSeconds", pf.startup_seconds},
                        {"stagingSeconds", pf.staging_seconds},
                        {"switchSeconds", pf.switch_seconds},
                        {"capacityType", solver::to_string(pool.capacity_type)},
                        {"interruptionsPerHour", pf.interruptions_per_hour},
                        {"restartSeconds", pf.restart_seconds},
                        {"expectedEpochSeconds", pf.expected_epoch_seconds},
                        {"interruptions", pf.interruptions},
                        {"seconds", pf.seconds},
                        {"cost", pf.cost},
                        {"lossMean", pf.loss_mean},
                        {"lossStddev", std::sqrt(std::max(0.0, pf.loss_variance))}});
      epoch += ph.epochs;
    }
  }
  out["phases"] = phases;

  out["predicted"] = {{"cost", figures.cost},
                      {"durationSeconds", figures.duration_seconds},
                      {"lossMean", figures.loss_mean},
                      {"lossStddev", figures.loss_stddev},
                      {"probability", figures.probability},
                      {"lossProbability", figures.loss_probability},
                      {"onTimeProbability", figures.on_time_probability},
                      {"interruptions", figures.interruptions},
                      {"kappa", figures.kappa},
                      {"lossBound", figures.loss_mean + figures.kappa * figures.loss_stddev},
                      {"meetsGuarantee", figures.meets_guarantee}};
  if (result.feasible && figures.feasible && result.algorithm != solver::Algorithm::Exp &&
      result.algorithm != solver::Algorithm::Full) {
    // The certificate: no plan meeting the constraints costs less than lowerBound.
    out["predicted"]["lowerBound"] = result.certificate.lower_bound;
    out["predicted"]["gap"] = result.certificate.gap;
    out["predicted"]["lowerBoundComplete"] = result.certificate.complete;
  }
  out["budgetLimited"] = result.stopped != solver::BudgetStop::None;
  if (result.stopped != solver::BudgetStop::None) {
    out["budgetStop"] = solver::to_string(result.stopped);
  }
  out["target"] = target_json(problem.target);
  out["violations"] = figures.violations;
  if (!out["feasible"].get<bool>()) {
    std::string reason = result.reason;
    if (reason.empty() && !figures.violations.empty()) reason = figures.violations.front();
    out["reason"] = reason;
    out["infeasibility"] = {{"binding", result.infeasibility.binding},
                            {"bestProbability", result.infeasibility.best_probability},
                            {"leastSeconds", result.infeasibility.least_seconds},
                            {"leastCost", result.infeasibility.least_cost},
                            {"complete", result.infeasibility.complete}};
  }
  json stats = {
      {"datasetSets", result.stats.dataset_sets},   {"placements", result.stats.placements},
      {"graphStates", result.stats.graph_states},   {"plansChecked", result.stats.plans_checked},
      {"boundClasses", result.stats.bound_classes}, {"boundSearches", result.stats.bound_searches}};
  if (timing) stats["solveSeconds"] = timing->seconds;
  out["stats"] = stats;
  return out;
}

std::string plan_to_table(const Problem& problem, const SolveResult& result) {
  const Figures figures = solver::evaluate(problem, result.plan);
  const bool feasible = result.feasible && figures.feasible;
  const solver::Target& target = problem.target;
  std::string out;

  out += fmt::format("Plan ({}): {}\n", solver::to_string(result.algorithm),
                     feasible ? "feasible" : "INFEASIBLE");
  if (result.stopped != solver::BudgetStop::None) {
    out += fmt::format("Budget-limited: the solve stopped early ({}); {}\n",
                       solver::to_string(result.stopped),
                       result.plan.phases.empty() ? "no plan was found by then"
                                                  : "this is the best plan it had found by then");
  }
  if (!feasible) {
    const std::string reason = !result.reason.empty()       ? result.reason
                               : figures.violations.empty() ? std::string("no plan found")
                                                            : figures.violations.front();
    out += fmt::format("Reason: {}\n", reason);
    const solver::Infeasibility& why = result.infeasibility;
    if (!why.binding.empty()) {
      std::string detail = fmt::format("Binding constraint: {}; best reachable P(target) {}",
                                       why.binding, format_probability(why.best_probability));
      if (why.least_seconds > 0) {
        detail += fmt::format("; least time meeting the guarantee {}",
                              format_duration(why.least_seconds));
      }
      if (why.least_cost > 0) {
        detail += fmt::format("; least cost meeting it {}", format_money(why.least_cost));
      }
      out += detail + '\n';
    }
  }

  if (walkable(figures, result.plan)) {
    std::string names;
    double samples = 0;
    for (std::size_t d : result.plan.datasets) {
      names += (names.empty() ? "" : ", ") + problem.datasets[d].name;
      samples += static_cast<double>(problem.datasets[d].samples);
    }
    if (!feasible) out += "\nClosest plan found (it breaks the constraints listed below):\n";
    const double wrong = solver::wrong_label_share(problem, result.plan.datasets);
    out += fmt::format(
        "Datasets: {} ({} samples per epoch{})\n\n", names,
        format_count(static_cast<std::int64_t>(samples)),
        wrong > 0 ? fmt::format(", {:.1f}% of the labels wrong", 100 * wrong) : std::string());

    TextTable table(
        {"#", "MODEL", "POOL", "WORKERS", "EPOCHS", "EPOCH TIME", "TIME", "COST", "LOSS AFTER"});
    for (std::size_t c : {0u, 4u, 5u, 6u, 7u}) table.align(c, TextTable::Align::Right);
    for (std::size_t i = 0; i < result.plan.phases.size(); ++i) {
      const solver::Phase& ph = result.plan.phases[i];
      const solver::PhaseFigures& pf = figures.phases[i];
      const solver::ModelVariant& model = problem.models[ph.model];
      const solver::Pool& pool = problem.pools[ph.pool];
      const std::string workers = fmt::format("{} x {} {}", ph.workers, model.gpus_per_worker,
                                              model.gpus_per_worker == 1 ? "GPU" : "GPUs");
      std::string pool_label = pool.name;
      if (!pool.gpu_type.empty() || pool.capacity_type == solver::CapacityType::Spot) {
        std::string what = pool.gpu_type;
        if (pool.capacity_type == solver::CapacityType::Spot) {
          what += (what.empty() ? "" : ", ") + std::string("spot");
        }
        pool_label = fmt::format("{} ({})", pool.name, what);
      }
      // With interruptions the epoch's time is its expectation, rework and restarts included.
      const std::string epoch_time =
          pf.interruptions_per_hour > 0 ? fmt::format("{} (~{})", format_duration(pf.epoch_seconds),
                                                      format_duration(pf.expected_epoch_seconds))
                                        : format_duration(pf.epoch_seconds);
      table.add_row({std::to_string(i + 1), model.name, pool_label, workers,
                     std::to_string(ph.epochs), epoch_time, format_duration(pf.seconds),
                     format_money(pf.cost),
                     fmt::format("{:.4g} ± {:.2g}", pf.loss_mean,
                                 std::sqrt(std::max(0.0, pf.loss_variance)))});
    }
    out += table.render(2);
    out += '\n';
  } else {
    out += "No plan to show.\n\n";
  }

  // Totals, each against its limit where the job sets one.
  TextTable totals({"", "PREDICTED", "REQUIRED"});
  totals.add_row({"Cost", format_money(figures.cost),
                  target.budget ? fmt::format("<= {}", format_money(*target.budget)) : "-"});
  const bool interrupted = figures.interruptions > 0;
  totals.add_row(
      {interrupted ? "Duration (expected)" : "Duration", format_duration(figures.duration_seconds),
       target.deadline_seconds ? fmt::format("<= {}{}", format_duration(*target.deadline_seconds),
                                             interrupted ? " (by chance, below)" : "")
                               : "-"});
  if (interrupted) {
    totals.add_row({"Interruptions", fmt::format("{:.3g} expected", figures.interruptions),
                    "rework and restarts are in the time and cost"});
    if (target.deadline_seconds) {
      totals.add_row({"P(on time)", format_probability(figures.on_time_probability),
                      fmt::format("> {}", target.probability)});
    }
  }
  // The guarantee compares mean + kappa * sd with the target: show that bound, not only the mean.
  totals.add_row(
      {"Loss",
       fmt::format("{:.4g} ± {:.3g} (bound {:.4g} = mean + {:.3g} sd)", figures.loss_mean,
                   figures.loss_stddev, figures.loss_mean + figures.kappa * figures.loss_stddev,
                   figures.kappa),
       fmt::format("bound <= {:.4g}", target.loss)});
  totals.add_row({figures.on_time_probability < 1 ? "P(target by deadline)" : "P(target)",
                  format_probability(figures.probability),
                  fmt::format(">= {} ({})", target.probability, guarantee_name(target.guarantee))});
  out += totals.render(2);
  if (feasible &&
      (result.algorithm == solver::Algorithm::DepL || result.algorithm == solver::Algorithm::Opt)) {
    out += fmt::format(
        "\nCertified: no plan costs less than {:.4g} (this one is within {} of the "
        "optimum{})\n",
        result.certificate.lower_bound, fmt::format("{:.2f}%", 100 * result.certificate.gap),
        result.certificate.complete ? "" : "; the bound's search was cut short");
  }

  if (!figures.violations.empty() && walkable(figures, result.plan)) {
    out += "\nViolated:\n";
    for (const auto& v : figures.violations) out += "  - " + v + '\n';
  }
  return out;
}

}  // namespace depl::cli
