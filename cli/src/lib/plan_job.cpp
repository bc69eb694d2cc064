#include "depl/cli/plan_job.hpp"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "depl/cli/input_files.hpp"

namespace depl::cli {

Expected<PlannedJob, std::vector<std::string>> plan_job(const PlanRequest& request) {
  std::vector<std::string> errors;
  solver::SolveOptions options;
  auto algorithm = solver::parse_algorithm(request.algorithm);
  if (algorithm) {
    options.algorithm = *algorithm;
  } else {
    errors.push_back(fmt::format("--algorithm: {}", algorithm.error().message));
  }
  if (request.eta) {
    const double eta = *request.eta;
    if (!std::isfinite(eta) || eta <= 0 || eta >= 1) {
      errors.push_back(fmt::format("--eta: must be in (0, 1), got {}", eta));
    } else {
      options.eta = eta;
    }
  }
  auto problem = load_problem(request.job_path, request.pools_path);
  if (!problem) errors.insert(errors.end(), problem.error().begin(), problem.error().end());
  if (!errors.empty()) return depl::unexpected(std::move(errors));

  const auto start = std::chrono::steady_clock::now();
  auto result = solver::solve(*problem, options);
  const auto stop = std::chrono::steady_clock::now();
  if (!result) {
    return depl::unexpected(std::vector<std::string>{
        fmt::format("--algorithm {}: {}", request.algorithm, result.error().message)});
  }
  PlannedJob planned{std::move(*problem), std::move(*result), {}};
  planned.timing.seconds = std::chrono::duration<double>(stop - start).count();
  return planned;
}

}  // namespace depl::cli
