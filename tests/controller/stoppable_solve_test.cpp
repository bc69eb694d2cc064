// solve_unless_stopped: the solve's result when it ends, and an immediate error when the
// controller stops first, with the solve left to finish on its own.
#include "depl/controller/stoppable_solve.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace depl::controller {
namespace {

using namespace std::chrono_literals;

// A solve that blocks until released, as a slow one would.
struct BlockingSolve {
  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  std::atomic<bool> started{false};
  std::atomic<bool> finished{false};

  SolveFunction function() {
    return [this](const solver::Problem&,
                  const solver::SolveOptions&) -> Expected<solver::SolveResult> {
      started = true;
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return released; });
      finished = true;
      solver::SolveResult result;
      result.feasible = true;
      return result;
    };
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      released = true;
    }
    cv.notify_all();
  }
};

TEST(StoppableSolve, ReturnsTheSolversResult) {
  BlockingSolve solve;
  std::stop_source stop;
  std::jthread releaser([&] {
    while (!solve.started) std::this_thread::yield();
    solve.release();
  });
  auto result = solve_unless_stopped({}, {}, stop.get_token(), solve.function());
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->feasible);
}

TEST(StoppableSolve, StopEndsTheWaitWhileTheSolveRunsOn) {
  auto solve = std::make_shared<BlockingSolve>();
  std::stop_source stop;
  std::jthread stopper([&] {
    while (!solve->started) std::this_thread::yield();
    stop.request_stop();
  });
  const auto asked = std::chrono::steady_clock::now();
  auto result = solve_unless_stopped({}, {}, stop.get_token(), solve->function());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, kSolveAbandoned);
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 5s);
  EXPECT_FALSE(solve->finished);
  // The abandoned solve still ends (and frees what it holds) when it is done.
  solve->release();
  while (!solve->finished) std::this_thread::yield();
}

TEST(StoppableSolve, AStopRequestedBeforeDoesNotSolve) {
  BlockingSolve solve;
  std::stop_source stop;
  stop.request_stop();
  auto result = solve_unless_stopped({}, {}, stop.get_token(), solve.function());
  ASSERT_FALSE(result);
  EXPECT_FALSE(solve.started);
}

}  // namespace
}  // namespace depl::controller
