#include "depl/controller/keyed_rate_limiter.hpp"

#include <gtest/gtest.h>

namespace depl::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(KeyedRateLimiter, EachKeyHasItsOwnBucketThatRefills) {
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 2, .burst = 3});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.allow("a", clock.now())) << i;
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  EXPECT_TRUE(limiter.allow("b", clock.now()));  // another key is not affected
  clock.advance(milliseconds(499));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  clock.advance(milliseconds(1));
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
}

TEST(KeyedRateLimiter, RefundGivesBackATokenUpToTheBurst) {
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 1, .burst = 2});
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  limiter.refund("a");
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  for (int i = 0; i < 5; ++i) limiter.refund("a");  // never more than the burst
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  limiter.refund("unknown");  // not tracked: nothing to do
  EXPECT_EQ(limiter.size(), 1u);
}

TEST(KeyedRateLimiter, WaitSaysHowLongUntilTheNextToken) {
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 4, .burst = 2});
  EXPECT_EQ(limiter.wait("a", clock.now()), Clock::Duration::zero());  // new keys start full
  EXPECT_EQ(limiter.size(), 0u);                                       // and asking tracks none
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_EQ(limiter.wait("a", clock.now()), Clock::Duration::zero());  // one token left
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  EXPECT_EQ(limiter.wait("a", clock.now()), milliseconds(250));  // one token at 4/s
  EXPECT_EQ(limiter.wait("b", clock.now()), Clock::Duration::zero());
  clock.advance(milliseconds(125));
  EXPECT_EQ(limiter.wait("a", clock.now()), milliseconds(125));
  EXPECT_FALSE(limiter.allow("a", clock.now()));  // a refusal takes nothing
  EXPECT_EQ(limiter.wait("a", clock.now()), milliseconds(125));
  clock.advance(milliseconds(125));
  EXPECT_EQ(limiter.wait("a", clock.now()), Clock::Duration::zero());
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  EXPECT_EQ(limiter.wait("a", clock.now()), milliseconds(250));
  limiter.refund("a");
  EXPECT_EQ(limiter.wait("a", clock.now()), Clock::Duration::zero());
}

TEST(KeyedRateLimiter, WaitIsExactlyWhatAllowNeeds) {
  // 1/3 s is no whole number of nanoseconds: the wait rounds up, never down.
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 3, .burst = 1});
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  const Clock::Duration wait = limiter.wait("a", clock.now());
  EXPECT_EQ(wait, std::chrono::nanoseconds(333'333'334));
  clock.advance(wait - std::chrono::nanoseconds(1));
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  clock.advance(std::chrono::nanoseconds(1));
  EXPECT_TRUE(limiter.allow("a", clock.now()));

  // Slower than a token a second: the wait is longer than a second.
  KeyedRateLimiter slow({.per_second = 0.25, .burst = 2});
  EXPECT_TRUE(slow.allow("p", clock.now()));
  EXPECT_TRUE(slow.allow("p", clock.now()));
  EXPECT_EQ(slow.wait("p", clock.now()), seconds(4));
  clock.advance(milliseconds(1500));
  EXPECT_EQ(slow.wait("p", clock.now()), milliseconds(2500));
}

TEST(KeyedRateLimiter, WaitFromAnEarlierReadingOfTheClockCountsUpToTheBucketsLastUse) {
  // Threads read the clock before taking the lock, so a bucket may have been used "later" than
  // the `now` a caller asks with; it refills only from its last use.
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 4, .burst = 1});
  const Clock::TimePoint earlier = clock.now();
  EXPECT_TRUE(limiter.allow("a", earlier + seconds(1)));
  EXPECT_EQ(limiter.wait("a", earlier), seconds(1) + milliseconds(250));
  EXPECT_EQ(limiter.wait("a", earlier + seconds(1)), milliseconds(250));
}

TEST(KeyedRateLimiter, RefilledBucketsAreSweptOnlyOnceFull) {
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 1, .burst = 10, .sweep_every = seconds(60)});
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.allow("drained", clock.now()));
  EXPECT_TRUE(limiter.allow("idle", clock.now()));
  EXPECT_EQ(limiter.size(), 2u);
  clock.advance(seconds(5));  // "idle" has refilled; "drained" has 5 of 10
  EXPECT_TRUE(limiter.allow("x", clock.now()));
  EXPECT_EQ(limiter.size(), 3u);  // no sweep before sweep_every
  clock.advance(seconds(55));     // "drained" has been full for 50 s, "x" for 59 s
  EXPECT_TRUE(limiter.allow("y", clock.now()));
  EXPECT_EQ(limiter.size(), 1u);
  // Sweeping a bucket loses nothing: "drained" starts full again, as it would have been.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(limiter.allow("drained", clock.now())) << i;
  EXPECT_FALSE(limiter.allow("drained", clock.now()));
}

TEST(KeyedRateLimiter, AtTheCapTheLeastRecentlyUsedGoes) {
  FakeClock clock;
  KeyedRateLimiter limiter({.per_second = 1, .burst = 1, .max_keys = 3});
  EXPECT_TRUE(limiter.allow("a", clock.now()));
  clock.advance(milliseconds(100));
  EXPECT_TRUE(limiter.allow("b", clock.now()));
  clock.advance(milliseconds(100));
  EXPECT_TRUE(limiter.allow("c", clock.now()));
  clock.advance(milliseconds(100));
  EXPECT_FALSE(limiter.allow("a", clock.now()));  // "a" is now the most recent
  EXPECT_TRUE(limiter.allow("d", clock.now()));   // evicts "b"
  EXPECT_EQ(limiter.size(), 3u);
  EXPECT_FALSE(limiter.allow("c", clock.now()));  // still tracked, still empty
  EXPECT_FALSE(limiter.allow("a", clock.now()));
  EXPECT_TRUE(limiter.allow("b", clock.now()));  // forgotten, so it starts full
  EXPECT_EQ(limiter.size(), 3u);
}

}  // namespace
}  // namespace depl::controller
