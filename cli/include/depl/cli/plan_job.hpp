// The steps `plan` and `simulate` share: read and validate the job and pools files, choose the
// algorithm, run the solver and time it. Failures come back as the messages to print on
// stderr, one per line, each naming the file or flag and what is wrong.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "depl/cli/plan_report.hpp"
#include "depl/common/expected.hpp"
#include "depl/solver/problem.hpp"
#include "depl/solver/solve.hpp"

namespace depl::cli {

struct PlanRequest {
  std::string job_path;
  std::string pools_path;
  std::string algorithm = "depl";  // depl | opt | exp | full
  std::optional<double> eta;       // the solver's default when not given
  // The solve's budget: seconds and a memory quantity ("96Mi"); 0 means no limit.
  double time_budget_seconds = std::chrono::duration<double>(solver::kDefaultTimeBudget).count();
  std::string memory_budget = "96Mi";
};

struct PlannedJob {
  solver::Problem problem;
  solver::SolveResult result;
  SolveTiming timing;
  std::vector<std::string> warnings;  // for stderr: inputs that are usable but look wrong
};

// Bad input (unreadable file, validation errors, bad flag values) and a solver that refuses the
// instance (opt on a large one) are errors; an infeasible job is a result.
Expected<PlannedJob, std::vector<std::string>> plan_job(const PlanRequest& request);

}  // namespace depl::cli
