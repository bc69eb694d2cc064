// SolveCancellations: a scope's token is requested by a cancel of its key or by the controller's
// stop, and by nothing else.
#include "depl/controller/solve_cancellation.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

TEST(SolveCancellations, CancellingAKeyStopsItsScopesOnly) {
  SolveCancellations solves;
  std::stop_source controller;
  auto a = solves.begin({"default", "a"}, controller.get_token());
  auto b = solves.begin({"default", "b"}, controller.get_token());
  EXPECT_FALSE(a->token().stop_requested());
  solves.cancel({"default", "a"});
  EXPECT_TRUE(a->token().stop_requested());
  EXPECT_FALSE(b->token().stop_requested());
  solves.cancel({"other", "b"});
  EXPECT_FALSE(b->token().stop_requested());
}

TEST(SolveCancellations, TheControllersStopReachesEveryScope) {
  SolveCancellations solves;
  std::stop_source controller;
  auto a = solves.begin({"default", "a"}, controller.get_token());
  controller.request_stop();
  EXPECT_TRUE(a->token().stop_requested());
  auto late = solves.begin({"default", "b"}, controller.get_token());
  EXPECT_TRUE(late->token().stop_requested());
}

TEST(SolveCancellations, AnEndedScopeIsNotCancelledAndANewOneStartsClear) {
  SolveCancellations solves;
  std::stop_source controller;
  std::stop_token ended;
  {
    auto scope = solves.begin({"default", "a"}, controller.get_token());
    ended = scope->token();
  }
  solves.cancel({"default", "a"});
  EXPECT_FALSE(ended.stop_requested());
  auto next = solves.begin({"default", "a"}, controller.get_token());
  EXPECT_FALSE(next->token().stop_requested());
}

}  // namespace
}  // namespace depl::controller
