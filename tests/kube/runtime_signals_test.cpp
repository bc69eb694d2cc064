// TerminationSignals: SIGTERM becomes a stop request (no process exit in this test: the
// second-signal exit is disabled).
#include "depl/kube/runtime/termination_signals.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

TEST(TerminationSignalsTest, SigtermRequestsStop) {
  std::stop_source stop;
  runtime_test::Signal stopped;
  std::stop_callback on_stop(stop.get_token(), [&] { stopped.bump(); });
  {
    TerminationSignals signals(stop, /*exit_on_second_signal=*/false);
    EXPECT_EQ(signals.received(), 0);
    ASSERT_EQ(std::raise(SIGTERM), 0);
    ASSERT_TRUE(stopped.wait_for(1));
    EXPECT_EQ(signals.received(), SIGTERM);
  }
  // The destructor restored the previous disposition and stopped its thread.
  struct sigaction current {};
  sigaction(SIGTERM, nullptr, &current);
  EXPECT_EQ(current.sa_handler, SIG_DFL);
}

TEST(TerminationSignalsTest, SigintAlsoRequestsStop) {
  std::stop_source stop;
  runtime_test::Signal stopped;
  std::stop_callback on_stop(stop.get_token(), [&] { stopped.bump(); });
  TerminationSignals signals(stop, false);
  ASSERT_EQ(std::raise(SIGINT), 0);
  ASSERT_TRUE(stopped.wait_for(1));
  EXPECT_EQ(signals.received(), SIGINT);
}

}  // namespace
}  // namespace depl::kube
