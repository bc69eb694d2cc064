// kubectl-depl: the project's command line. Also works as a kubectl plugin (`kubectl depl ...`)
// when on the PATH.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  // stdout is for what a command prints (a table, JSON, YAML): logs, the Kubernetes client's
  // included, go to stderr. Commands that log elsewhere (demo: a file) set their own.
  spdlog::set_default_logger(spdlog::stderr_color_mt("kubectl-depl"));
  CLI::App app{"kubectl-depl: plan, simulate and run dependable training jobs", "kubectl-depl"};
  app.require_subcommand(1);
  int exit_code = depl::cli::kExitOk;
  depl::cli::add_plan_command(app, exit_code);
  depl::cli::add_simulate_command(app, exit_code);
  depl::cli::add_dev_cluster_command(app, exit_code);
  depl::cli::add_demo_command(app, exit_code);
  depl::cli::add_status_command(app, exit_code);
  depl::cli::add_profile_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : depl::cli::kExitBadInput;
  }
  return exit_code;
}
