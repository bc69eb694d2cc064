#include "depl/cli/simulation_report.hpp"

#include <fmt/format.h>

#include "depl/cli/human_units.hpp"
#include "depl/cli/text_table.hpp"
#include "depl/solver/evaluator.hpp"

namespace depl::cli {

const char* noise_name(solver::Noise noise) {
  return noise == solver::Noise::StudentT3 ? "student-t" : "gaussian";
}

Expected<solver::Noise> parse_noise(std::string_view name) {
  if (name == "gaussian") return solver::Noise::Gaussian;
  if (name == "student-t") return solver::Noise::StudentT3;
  return depl::error(fmt::format("--noise: must be one of gaussian, student-t; got \"{}\"", name));
}

namespace {

bool prediction_inside(const solver::SimulationResult& s) {
  return s.interval_low <= s.predicted_probability && s.predicted_probability <= s.interval_high;
}

}  // namespace

nlohmann::json simulation_to_json(const solver::Problem& problem, const solver::SolveResult& result,
                                  const solver::SimulationOptions& options,
                                  const solver::SimulationResult& simulation,
                                  std::optional<SolveTiming> timing) {
  const solver::Figures figures = solver::evaluate(problem, result.plan);
  return {
      {"predictedProbability", simulation.predicted_probability},
      {"empiricalProbability", simulation.probability},
      {"interval", {simulation.interval_low, simulation.interval_high}},
      {"intervalLevel", 0.95},
      {"standardError", simulation.standard_error},
      {"runs", simulation.runs},
      {"reached", simulation.reached},
      {"reachedStoppingAtTarget", simulation.reached_stopping_at_target},
      {"probabilityStoppingAtTarget", simulation.probability_stopping_at_target},
      {"seed", options.seed},
      {"noise", noise_name(options.noise)},
      {"meanFinalLoss", simulation.mean_final_loss},
      {"predictedLossMean", figures.loss_mean},
      {"onTime", simulation.on_time},
      {"meanSeconds", simulation.mean_seconds},
      {"meanCost", simulation.mean_cost},
      {"costStandardError", simulation.cost_standard_error},
      {"costStddev", simulation.cost_stddev},
      {"predictedCost", simulation.predicted_cost},
      {"meanInterruptions", simulation.mean_interruptions},
      {"requiredProbability", problem.target.probability},
      {"consistent", prediction_inside(simulation)},
      {"plan", plan_to_json(problem, result, timing)},
  };
}

std::string simulation_to_table(const solver::Problem& problem, const solver::SolveResult& result,
                                const solver::SimulationOptions& options,
                                const solver::SimulationResult& s) {
  const solver::Figures figures = solver::evaluate(problem, result.plan);
  std::string out = plan_to_table(problem, result);
  out += fmt::format("\nMonte Carlo: {} runs, seed {}, {} noise\n\n", format_count(s.runs),
                     options.seed, noise_name(options.noise));
  TextTable table({"", "P(TARGET)", "95% INTERVAL", "FINAL LOSS (MEAN)"});
  table.add_row({"Predicted", format_probability(s.predicted_probability), "",
                 fmt::format("{:.5g}", figures.loss_mean)});
  table.add_row({"Simulated", format_probability(s.probability),
                 fmt::format("[{:.4f}, {:.4f}]", s.interval_low, s.interval_high),
                 fmt::format("{:.5g}", s.mean_final_loss)});
  const solver::Interval stopping = solver::wilson_interval(s.reached_stopping_at_target, s.runs);
  table.add_row({"Stopping at target", format_probability(s.probability_stopping_at_target),
                 fmt::format("[{:.4f}, {:.4f}]", stopping.low, stopping.high), ""});
  out += table.render(2);
  out += "  (The operator stops at the first epoch at or below the target: \"Stopping at "
         "target\" counts those runs.)\n";
  const bool interrupted = figures.interruptions > 0;
  out += fmt::format("\n  Reached the target{} in {} of {} runs (standard error {:.4f}).\n",
                     interrupted && problem.target.deadline_seconds ? " by the deadline" : "",
                     format_count(s.reached), format_count(s.runs), s.standard_error);
  if (interrupted) {
    out += fmt::format(
        "  Interruptions: {:.3g} per run on average ({:.3g} predicted); done by the deadline in "
        "{} runs.\n  Cost: {} on average (predicted {}; standard error {}, one run's spread "
        "{}); duration {} on average.\n",
        s.mean_interruptions, figures.interruptions, format_count(s.on_time),
        format_money(s.mean_cost), format_money(s.predicted_cost),
        format_money(s.cost_standard_error), format_money(s.cost_stddev),
        format_duration(s.mean_seconds));
  }
  if (prediction_inside(s)) {
    out += "  The prediction lies inside the simulated 95% interval.\n";
  } else {
    out += fmt::format(
        "  The prediction lies {} the simulated 95% interval{}.\n",
        s.predicted_probability < s.interval_low ? "below" : "above",
        s.predicted_probability < s.interval_low ? " (the guarantee is conservative here)" : "");
  }
  if (s.interval_high < problem.target.probability) {
    out += fmt::format("  Warning: the simulated probability is below the required {}.\n",
                       problem.target.probability);
  }
  return out;
}

}  // namespace depl::cli
