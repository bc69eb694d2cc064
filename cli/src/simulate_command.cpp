// `kubectl-depl simulate`: plans the job, then draws Monte Carlo runs of the plan's loss process
// and prints the empirical probability of reaching the target next to the predicted one. An
// infeasible job exits 3; its closest plan, when there is one, is simulated all the same.
#include <cstdint>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "depl/cli/output_format.hpp"
#include "depl/cli/plan_job.hpp"
#include "depl/cli/simulation_report.hpp"
#include "depl/solver/simulate.hpp"

namespace depl::cli {
namespace {

struct SimulateArgs {
  PlanRequest request;
  std::string output = "table";
  std::string noise = "gaussian";
  int runs = 10'000;
  std::uint64_t seed = 1;
};

int run_simulate(const SimulateArgs& args) {
  std::vector<std::string> errors;
  auto format = parse_output_format(args.output);
  if (!format) errors.push_back(format.error().message);
  auto noise = parse_noise(args.noise);
  if (!noise) errors.push_back(noise.error().message);
  if (args.runs < 1 || args.runs > 100'000'000) {
    errors.push_back("--runs: must be in [1, 100000000], got " + std::to_string(args.runs));
  }
  if (!errors.empty()) {
    print_errors(errors);
    return kExitBadInput;
  }
  auto planned = plan_job(args.request);
  if (!planned) {
    print_errors(planned.error());
    return kExitBadInput;
  }
  const PlannedJob& job = *planned;
  for (const auto& w : job.warnings) std::cerr << "warning: " << w << '\n';
  const bool feasible = plan_is_feasible(job.problem, job.result);
  if (!feasible && job.result.plan.phases.empty()) {
    // No plan at all: show why, as `plan` would, and exit 3.
    if (*format == OutputFormat::Table) {
      std::cout << plan_to_table(job.problem, job.result);
    } else {
      std::cout << render_document({{"plan", plan_to_json(job.problem, job.result, job.timing)}},
                                   *format);
    }
    std::cerr << "error: the job is infeasible and no plan was found; nothing to simulate\n";
    return kExitInfeasible;
  }

  solver::SimulationOptions options;
  options.runs = args.runs;
  options.seed = args.seed;
  options.noise = *noise;
  const solver::SimulationResult simulation =
      solver::simulate(job.problem, job.result.plan, options);
  if (*format == OutputFormat::Table) {
    std::cout << simulation_to_table(job.problem, job.result, options, simulation);
  } else {
    std::cout << render_document(
        simulation_to_json(job.problem, job.result, options, simulation, job.timing), *format);
  }
  if (!feasible) {
    // The closest plan is still worth simulating (it shows, e.g., how often EXP's plan really
    // reaches the target), but the job as stated has no plan: exit 3 as `plan` does.
    std::cerr << "warning: the job is infeasible; simulated the closest plan found\n";
    return kExitInfeasible;
  }
  return kExitOk;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Plan a job, then check the plan's P(target) by Monte Carlo simulation");
  cmd->add_option("-f,--filename", args->request.job_path, "DependableTrainingJob manifest (YAML)")
      ->required();
  cmd->add_option("--pools", args->request.pools_path, "Node pools file (YAML, `pools: [...]`)")
      ->required();
  cmd->add_option("--runs", args->runs, "Number of simulated runs")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the random generator (same seed, same runs)")
      ->capture_default_str();
  cmd->add_option("--noise", args->noise,
                  "Noise of each epoch and switch: gaussian, or student-t (t with 3 degrees of "
                  "freedom scaled to the same variance)")
      ->capture_default_str();
  cmd->add_option("--algorithm", args->request.algorithm, "depl, opt, exp or full")
      ->capture_default_str();
  cmd->add_option("--eta", args->request.eta,
                  "Discretisation step of the expanded graph, relative to the loss range");
  add_budget_options(*cmd, args->request);
  cmd->add_option("-o,--output", args->output, "Output format: table, json or yaml")
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_simulate(*args); });
}

}  // namespace depl::cli
