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
