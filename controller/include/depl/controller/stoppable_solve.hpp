// The solver as the controller calls it: on a thread of its own, so that the reconcile waiting
// for it stops waiting when the controller stops (shutdown, lost leadership) or the job is
// deleted (solve_cancellation.hpp). A slow solve must hold neither the controller's shutdown nor
// the hand-over to a standby. An abandoned solve runs on its own copy of the problem, touching
// nothing of the controller, until the solver sees the same stop at its next budget check; its
// result is dropped.
#pragma once

#include <functional>
#include <stop_token>

#include "depl/common/expected.hpp"
#include "depl/solver/solve.hpp"

namespace depl::controller {

using SolveFunction = std::function<Expected<solver::SolveResult>(const solver::Problem&,
                                                                  const solver::SolveOptions&)>;

// The message of the error returned when `stop` was requested before the solve ended.
inline constexpr const char* kSolveAbandoned =
    "the solve was abandoned: the controller is stopping or the job was deleted";

// solve(problem, options), or an error (kSolveAbandoned) as soon as `stop` is requested. Without
// a stop token that can be requested the solve runs on the calling thread. `solve` defaults to
// solver::solve (tests pass one that blocks).
Expected<solver::SolveResult> solve_unless_stopped(const solver::Problem& problem,
                                                   const solver::SolveOptions& options,
                                                   std::stop_token stop, SolveFunction solve = {});

}  // namespace depl::controller
