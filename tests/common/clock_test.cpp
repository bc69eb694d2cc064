#include "depl/common/clock.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "depl/common/random.hpp"

namespace depl {
namespace {

using namespace std::chrono_literals;

TEST(FakeClockTest, TimeMovesOnlyOnAdvanceAndWallTimeFollows) {
  FakeClock clock;
  const auto start = clock.now();
  const auto wall = clock.wall_now();
  EXPECT_EQ(clock.now(), start);
  clock.advance(1500ms);
  EXPECT_EQ(clock.now() - start, 1500ms);
  EXPECT_EQ(clock.wall_now() - wall, 1500ms);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(wall.time_since_epoch()).count(),
            1767225600);
}

TEST(FakeClockTest, SleeperWakesOnlyWhenDeadlinePasses) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::jthread sleeper([&](std::stop_token stop) {
    EXPECT_TRUE(clock.sleep_for(10s, stop));
    woke = true;
  });
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  clock.advance(9s);
  // Still asleep: it is still registered as a sleeper after the partial advance.
  EXPECT_EQ(clock.sleepers(), 1u);
  EXPECT_FALSE(woke.load());
  clock.advance(1s);
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_EQ(clock.sleepers(), 0u);
}

TEST(FakeClockTest, StopRequestInterruptsSleep) {
  FakeClock clock;
  std::atomic<int> result{-1};
  std::jthread sleeper([&](std::stop_token stop) { result = clock.sleep_for(1h, stop) ? 1 : 0; });
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  sleeper.request_stop();
  sleeper.join();
  EXPECT_EQ(result.load(), 0);
}

TEST(FakeClockTest, WaitUntilReturnsWhenConditionBecomesTrue) {
  FakeClock clock;
  std::mutex mutex;
  std::condition_variable_any cv;
  bool flag = false;
  std::atomic<int> result{-1};
  std::jthread waiter([&](std::stop_token stop) {
    std::unique_lock lock(mutex);
    result = clock.wait_until(lock, cv, clock.now() + 1h, stop, [&] { return flag; }) ? 1 : 0;
  });
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  {
    std::lock_guard lock(mutex);
    flag = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_EQ(result.load(), 1);
}

TEST(FakeClockTest, AdvanceToNextDeadlineJumpsToEarliestSleeper) {
  FakeClock clock;
  const auto start = clock.now();
  std::jthread a([&](std::stop_token stop) { clock.sleep_for(3s, stop); });
  std::jthread b([&](std::stop_token stop) { clock.sleep_for(7s, stop); });
  ASSERT_TRUE(clock.wait_for_sleepers(2));
  ASSERT_TRUE(clock.advance_to_next_deadline());
  EXPECT_EQ(clock.now() - start, 3s);
  a.join();
  ASSERT_TRUE(clock.wait_for_sleepers(1));
  ASSERT_TRUE(clock.advance_to_next_deadline());
  EXPECT_EQ(clock.now() - start, 7s);
  b.join();
  EXPECT_FALSE(clock.advance_to_next_deadline());
}

TEST(SystemClockTest, ZeroLengthSleepReturnsAndStopWins) {
  SystemClock clock;
  std::stop_source source;
  EXPECT_TRUE(clock.sleep_for(0s, source.get_token()));
  source.request_stop();
  EXPECT_FALSE(clock.sleep_for(1h, source.get_token()));
}

TEST(RandomSourceTest, SameSeedReplaysSameSequenceAndJitterStaysInRange) {
  RandomSource a(42), b(42);
  for (int i = 0; i < 100; ++i) {
    const auto ja = a.jitter(std::chrono::nanoseconds(1000), 0.5);
    EXPECT_EQ(ja, b.jitter(std::chrono::nanoseconds(1000), 0.5));
    EXPECT_GE(ja.count(), 1000);
    EXPECT_LT(ja.count(), 1500);
  }
}

}  // namespace
}  // namespace depl
