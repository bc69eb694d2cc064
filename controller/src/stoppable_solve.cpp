#include "depl/controller/stoppable_solve.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace depl::controller {

namespace {

// Shared by the waiting reconcile and the solving thread; whichever leaves last frees it.
struct SolveState {
  solver::Problem problem;
  solver::SolveOptions options;
  SolveFunction solve;
  std::mutex mutex;
  std::condition_variable_any done;
  std::optional<Expected<solver::SolveResult>> result;
};

}  // namespace

Expected<solver::SolveResult> solve_unless_stopped(const solver::Problem& problem,
                                                   const solver::SolveOptions& options,
                                                   std::stop_token stop, SolveFunction solve) {
  if (!solve)
    solve = [](const solver::Problem& p, const solver::SolveOptions& o) {
      return solver::solve(p, o);
    };
  if (!stop.stop_possible()) return solve(problem, options);
  if (stop.stop_requested()) return error(kSolveAbandoned);
  auto state = std::make_shared<SolveState>();
  state->problem = problem;
  state->options = options;
  state->solve = std::move(solve);
  std::thread([state] {
    auto result = state->solve(state->problem, state->options);
    std::lock_guard lock(state->mutex);
    state->result.emplace(std::move(result));
    state->done.notify_all();
  }).detach();
  std::unique_lock lock(state->mutex);
  if (!state->done.wait(lock, stop, [&] { return state->result.has_value(); })) {
    return error(kSolveAbandoned);
  }
  return std::move(*state->result);
}

}  // namespace depl::controller
