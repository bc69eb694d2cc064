#include "depl/cli/plan_job.hpp"

#include <chrono>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "depl/cli/input_files.hpp"
#include "depl/common/quantity.hpp"

namespace depl::cli {

Expected<PlannedJob, std::vector<std::string>> plan_job(const PlanRequest& request) {
  std::vector<std::string> errors;
  solver::SolveOptions options;
  auto algorithm = solver::parse_algorithm(request.algorithm);
  if (algorithm) {
    options.algorithm = *algorithm;
  } else {
    // The solver's message names its own field ("algorithm: must be one of ..."); name the flag.
    std::string_view message = algorithm.error().message;
    if (message.starts_with("algorithm: ")) message.remove_prefix(11);
    errors.push_back(fmt::format("--algorithm: {}", message));
  }
  if (request.eta) {
    const double eta = *request.eta;
    if (!std::isfinite(eta) || eta <= 0 || eta >= 1) {
      errors.push_back(fmt::format("--eta: must be in (0, 1), got {}", eta));
    } else {
      options.eta = eta;
    }
  }
  // A million seconds is no limit in practice; more may not fit the milliseconds' integer.
  if (!(request.time_budget_seconds >= 0) || !(request.time_budget_seconds <= 1e6)) {
    errors.push_back(fmt::format(
        "--time-budget: must be a number of seconds in [0, 1000000] (0: no limit), got {}",
        request.time_budget_seconds));
  } else {
    options.budget.time = std::chrono::milliseconds(
        static_cast<std::int64_t>(std::ceil(request.time_budget_seconds * 1000)));
  }
  if (auto bytes = parse_quantity(request.memory_budget); !bytes) {
    errors.push_back(fmt::format("--memory-budget: {}", bytes.error().message));
  } else if (!(*bytes >= 0) || !(*bytes <= 0x1p60)) {
    // 1Ei: any more is no limit in practice, and may not fit a size_t.
    errors.push_back(fmt::format("--memory-budget: must be in [0, 1Ei] (0: no limit), got {}",
                                 request.memory_budget));
  } else {
    options.budget.memory_bytes = static_cast<std::size_t>(*bytes);
  }
  std::vector<std::string> warnings;
  auto problem = load_problem(request.job_path, request.pools_path, &warnings);
  if (!problem) errors.insert(errors.end(), problem.error().begin(), problem.error().end());
  if (!errors.empty()) return depl::unexpected(std::move(errors));

  const auto start = std::chrono::steady_clock::now();
  auto result = solver::solve(*problem, options);
  const auto stop = std::chrono::steady_clock::now();
  if (!result) {
    return depl::unexpected(std::vector<std::string>{
        fmt::format("--algorithm {}: {}", request.algorithm, result.error().message)});
  }
  PlannedJob planned{std::move(*problem), std::move(*result), {}, std::move(warnings)};
  planned.timing.seconds = std::chrono::duration<double>(stop - start).count();
  return planned;
}

}  // namespace depl::cli
