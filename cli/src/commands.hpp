// Every kubectl-depl subcommand registers itself through one of these functions, one file per
// subcommand (cli/src/<name>_command.cpp). main.cpp calls them all; the CLI stays thin: parse
// arguments, read files, call a library, print.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace depl::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;     // the job or operation did not succeed
inline constexpr int kExitBadInput = 2;    // bad arguments or input files
inline constexpr int kExitInfeasible = 3;  // plan: no plan meets the constraints

// Each message on its own line of stderr, after "error: ".
void print_errors(const std::vector<std::string>& errors);

struct PlanRequest;
// --time-budget and --memory-budget, shared by plan and simulate.
void add_budget_options(CLI::App& cmd, PlanRequest& request);

// Each adds a subcommand to `app`; the subcommand's callback stores its exit code in `exit_code`.
void add_plan_command(CLI::App& app, int& exit_code);
void add_simulate_command(CLI::App& app, int& exit_code);
void add_dev_cluster_command(CLI::App& app, int& exit_code);
void add_demo_command(CLI::App& app, int& exit_code);
void add_status_command(CLI::App& app, int& exit_code);
void add_profile_command(CLI::App& app, int& exit_code);

}  // namespace depl::cli
