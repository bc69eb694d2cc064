// `kubectl-depl plan`: reads a job and a pools file, runs the solver and prints the plan as a
// table, JSON or YAML; optionally writes an SVG of the predicted loss.
#include <fstream>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "depl/cli/loss_plot.hpp"
#include "depl/cli/output_format.hpp"
#include "depl/cli/plan_job.hpp"
#include "depl/cli/plan_report.hpp"

namespace depl::cli {
namespace {

struct PlanArgs {
  PlanRequest request;
  std::string output = "table";
  std::string plot_path;
};

int run_plan(const PlanArgs& args) {
  auto format = parse_output_format(args.output);
  if (!format) {
    print_errors({format.error().message});
    return kExitBadInput;
  }
  auto planned = plan_job(args.request);
  if (!planned) {
    print_errors(planned.error());
    return kExitBadInput;
  }
  const PlannedJob& job = *planned;
  for (const auto& w : job.warnings) std::cerr << "warning: " << w << '\n';
  if (*format == OutputFormat::Table) {
    std::cout << plan_to_table(job.problem, job.result);
  } else {
    std::cout << render_document(plan_to_json(job.problem, job.result, job.timing), *format);
  }
  std::cout.flush();

  int exit_code = plan_is_feasible(job.problem, job.result) ? kExitOk : kExitInfeasible;
  if (!args.plot_path.empty()) {
    LossPlotOptions plot_options;
    plot_options.algorithm = solver::to_string(job.result.algorithm);
    auto svg = loss_plot_svg(job.problem, job.result.plan, plot_options);
    if (!svg) {
      std::cerr << "warning: --plot: nothing written: " << svg.error().message << '\n';
    } else {
      std::ofstream out(args.plot_path, std::ios::binary | std::ios::trunc);
      out << *svg;
      out.close();
      if (!out) {
        std::cerr << "error: --plot: cannot write " << args.plot_path << '\n';
        if (exit_code == kExitOk) exit_code = kExitFailure;
      }
    }
  }
  return exit_code;
}

}  // namespace

void print_errors(const std::vector<std::string>& errors) {
  for (const auto& e : errors) std::cerr << "error: " << e << '\n';
}

void add_budget_options(CLI::App& cmd, PlanRequest& request) {
  cmd.add_option("--time-budget", request.time_budget_seconds,
                 "Seconds the solve may take (0: no limit); past them the best plan found so "
                 "far is printed, marked budget-limited")
      ->capture_default_str();
  cmd.add_option("--memory-budget", request.memory_budget,
                 "Working memory of the solve, as a quantity (0: no limit)")
      ->capture_default_str();
}

void add_plan_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plan a DependableTrainingJob: datasets, model phases, pools and workers");
  cmd->add_option("-f,--filename", args->request.job_path, "DependableTrainingJob manifest (YAML)")
      ->required();
  cmd->add_option("--pools", args->request.pools_path, "Node pools file (YAML, `pools: [...]`)")
      ->required();
  cmd->add_option("-o,--output", args->output, "Output format: table, json or yaml")
      ->capture_default_str();
  cmd->add_option("--algorithm", args->request.algorithm, "depl, opt, exp or full")
      ->capture_default_str();
  cmd->add_option("--eta", args->request.eta,
                  "Discretisation step of the expanded graph, relative to the loss range");
  cmd->add_option("--plot", args->plot_path, "Write an SVG of the predicted loss to this file");
  add_budget_options(*cmd, args->request);
  cmd->callback([args, &exit_code] { exit_code = run_plan(*args); });
}

}  // namespace depl::cli
