// WorkQueue and its rate limiters on a FakeClock: de-duplication, the processing set, delayed
// adds, backoff figures, shutdown and metrics.
#include "depl/kube/runtime/work_queue.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "runtime_test_support.hpp"

namespace depl::kube {
namespace {

using namespace std::chrono_literals;

ObjectKey key(const std::string& name) {
  return ObjectKey{"ns", name};
}

struct QueueFixture {
  FakeClock clock;
  WorkQueue queue{clock, default_controller_rate_limiter(clock), "test"};
};

TEST(WorkQueueTest, DeduplicatesAndKeepsFifoOrder) {
  QueueFixture f;
  f.queue.add(key("a"));
  f.queue.add(key("b"));
  f.queue.add(key("a"));
  f.queue.add(key("c"));
  EXPECT_EQ(f.queue.len(), 3u);
  EXPECT_EQ(f.queue.get(), key("a"));
  EXPECT_EQ(f.queue.get(), key("b"));
  EXPECT_EQ(f.queue.get(), key("c"));
  EXPECT_EQ(f.queue.metrics().adds_total, 3u);
}

TEST(WorkQueueTest, KeyInFlightIsNotHandedOutTwiceAndComesBackAfterDone) {
  QueueFixture f;
  f.queue.add(key("a"));
  ASSERT_EQ(f.queue.get(), key("a"));
  f.queue.add(key("a"));  // changed again while being reconciled
  f.queue.add(key("b"));
  EXPECT_EQ(f.queue.len(), 1u);
  EXPECT_EQ(f.queue.get(), key("b"));  // "a" is parked, not handed to a second worker
  EXPECT_EQ(f.queue.len(), 0u);
  f.queue.done(key("a"));
  EXPECT_EQ(f.queue.len(), 1u);
  EXPECT_EQ(f.queue.get(), key("a"));
}

// add_first: the key goes ahead of every queued key, moved there if it was queued already (not
// duplicated); a key in flight goes to the front when done(). Plain adds keep their order.
TEST(WorkQueueTest, AddFirstJumpsTheQueueOnce) {
  QueueFixture f;
  f.queue.add(key("a"));
  f.queue.add(key("b"));
  f.queue.add(key("c"));
  f.queue.add_first(key("c"));  // queued: moved to the front
  f.queue.add_first(key("d"));  // new: in front of c
  f.queue.add_first(key("d"));  // already first
  EXPECT_EQ(f.queue.len(), 4u);
  EXPECT_EQ(f.queue.metrics().adds_total, 4u);
  EXPECT_EQ(f.queue.get(), key("d"));
  EXPECT_EQ(f.queue.get(), key("c"));
  const auto a = f.queue.get();
  EXPECT_EQ(a, key("a"));
  f.queue.add(key("e"));
  f.queue.add_first(key("a"));  // in flight: parked, first once done
  EXPECT_EQ(f.queue.len(), 2u);  // b, e
  f.queue.done(*a);
  EXPECT_EQ(f.queue.get(), key("a"));
  EXPECT_EQ(f.queue.get(), key("b"));
  EXPECT_EQ(f.queue.get(), key("e"));
  EXPECT_EQ(f.queue.len(), 0u);
  // Parked by a plain add and done: back of the queue as before.
  f.queue.add(key("f"));
  f.queue.add(key("b"));
  f.queue.done(key("b"));
  EXPECT_EQ(f.queue.get(), key("f"));
  EXPECT_EQ(f.queue.get(), key("b"));
  f.queue.shut_down();
  f.queue.add_first(key("g"));  // ignored after shut_down
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueueTest, DoneWithoutReAddDoesNotRequeue) {
  QueueFixture f;
  f.queue.add(key("a"));
  ASSERT_EQ(f.queue.get(), key("a"));
  f.queue.done(key("a"));
  EXPECT_EQ(f.queue.len(), 0u);
}

TEST(WorkQueueTest, AddAfterWaitsForTheClockAndEarlierTimeWins) {
  QueueFixture f;
  f.queue.add_after(key("a"), 5s);
  f.queue.add_after(key("b"), 10s);
  f.queue.add_after(key("b"), 2s);   // sooner: replaces 10 s
  f.queue.add_after(key("a"), 60s);  // later: ignored, 5 s stays
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock.advance(2s);
  EXPECT_EQ(f.queue.len(), 1u);
  EXPECT_EQ(f.queue.get(), key("b"));
  f.clock.advance(2999ms);
  EXPECT_EQ(f.queue.len(), 0u);
  f.clock.advance(1ms);
  EXPECT_EQ(f.queue.get(), key("a"));
  EXPECT_EQ(f.queue.metrics().waiting, 0u);
}

TEST(WorkQueueTest, BlockedGetWakesForADelayedKeyAddedLater) {
  QueueFixture f;
  auto got = std::async(std::launch::async, [&] { return f.queue.get(); });
  ASSERT_TRUE(f.clock.wait_for_sleepers(1));
  f.queue.add_after(key("late"), 3s);
  // The getter re-arms its wait for the new deadline; advancing past it must deliver the key
  // whether or not it has re-armed yet.
  f.clock.advance(3s);
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(got.get(), key("late"));
}

TEST(RateLimiterTest, ItemExponentialDoublesFromBaseToCap) {
  ItemExponentialRateLimiter limiter(5ms, 1000s);
  EXPECT_EQ(limiter.when(key("a")), 5ms);
  EXPECT_EQ(limiter.when(key("a")), 10ms);
  EXPECT_EQ(limiter.when(key("a")), 20ms);
  EXPECT_EQ(limiter.when(key("b")), 5ms);  // per item
  EXPECT_EQ(limiter.num_requeues(key("a")), 3);
  for (int i = 0; i < 40; ++i) limiter.when(key("a"));
  EXPECT_EQ(limiter.when(key("a")), std::chrono::nanoseconds(1000s));
  limiter.forget(key("a"));
  EXPECT_EQ(limiter.num_requeues(key("a")), 0);
  EXPECT_EQ(limiter.when(key("a")), 5ms);
}

TEST(RateLimiterTest, DefaultIsMaxOfItemBackoffAndOverallBucket) {
  FakeClock clock;
  auto limiter = default_controller_rate_limiter(clock);
  // Burst of 100 distinct failing keys: only the per-item 5 ms applies.
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(limiter->when(key(fmt::format("k{}", i))), 5ms) << i;
  }
  // The 101st and 102nd wait for bucket tokens at 10/s: 100 ms and 200 ms.
  EXPECT_EQ(limiter->when(key("k100")), 100ms);
  EXPECT_EQ(limiter->when(key("k101")), 200ms);
  // The same key failing again: per-item 10 ms, but the bucket's 300 ms dominates.
  EXPECT_EQ(limiter->when(key("k0")), 300ms);
  EXPECT_EQ(limiter->num_requeues(key("k0")), 2);
  limiter->forget(key("k0"));
  EXPECT_EQ(limiter->num_requeues(key("k0")), 0);
}

TEST(WorkQueueTest, AddRateLimitedBacksOffAndCountsRetries) {
  FakeClock clock;
  WorkQueue queue(clock, std::make_unique<ItemExponentialRateLimiter>(5ms, 1000s));
  queue.add_rate_limited(key("a"));
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(5ms);
  ASSERT_EQ(queue.get(), key("a"));
  queue.done(key("a"));
  queue.add_rate_limited(key("a"));
  clock.advance(9ms);
  EXPECT_EQ(queue.len(), 0u);
  clock.advance(1ms);
  EXPECT_EQ(queue.len(), 1u);
  EXPECT_EQ(queue.num_requeues(key("a")), 2);
  EXPECT_EQ(queue.metrics().retries_total, 2u);
  queue.forget(key("a"));
  EXPECT_EQ(queue.num_requeues(key("a")), 0);
}

TEST(WorkQueueTest, ShutDownHandsOutQueuedKeysThenEnds) {
  QueueFixture f;
  f.queue.add(key("a"));
  f.queue.add_after(key("delayed"), 1s);
  f.queue.shut_down();
  f.queue.add(key("ignored"));
  EXPECT_EQ(f.queue.get(), key("a"));
  f.clock.advance(2s);  // delayed keys were dropped by shut_down
  EXPECT_EQ(f.queue.get(), std::nullopt);
  EXPECT_TRUE(f.queue.shutting_down());
}

TEST(WorkQueueTest, ShutDownWakesBlockedGetters) {
  QueueFixture f;
  auto a = std::async(std::launch::async, [&] { return f.queue.get(); });
  auto b = std::async(std::launch::async, [&] { return f.queue.get(); });
  ASSERT_TRUE(f.clock.wait_for_sleepers(2));
  f.queue.shut_down();
  ASSERT_EQ(a.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(b.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(a.get(), std::nullopt);
  EXPECT_EQ(b.get(), std::nullopt);
}

TEST(WorkQueueTest, StopTokenWinsOverQueuedKeys) {
  QueueFixture f;
  f.queue.add(key("a"));
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(f.queue.get(stop.get_token()), std::nullopt);
  EXPECT_EQ(f.queue.len(), 1u);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForKeysInFlight) {
  QueueFixture f;
  f.queue.add(key("a"));
  ASSERT_EQ(f.queue.get(), key("a"));
  auto drained = std::async(std::launch::async, [&] { f.queue.shut_down_with_drain(); });
  EXPECT_EQ(drained.wait_for(0ms), std::future_status::timeout);
  f.queue.done(key("a"));
  EXPECT_EQ(drained.wait_for(10s), std::future_status::ready);
}

TEST(WorkQueueTest, MetricsMeasureLatencyAndWorkOnTheClock) {
  QueueFixture f;
  f.queue.add(key("a"));
  f.queue.add(key("b"));
  f.clock.advance(2s);
  ASSERT_EQ(f.queue.get(), key("a"));
  f.clock.advance(3s);
  auto in_flight = f.queue.metrics();
  EXPECT_EQ(in_flight.depth, 1u);
  EXPECT_EQ(in_flight.processing, 1u);
  EXPECT_DOUBLE_EQ(in_flight.longest_running_processor_seconds, 3.0);
  f.queue.done(key("a"));
  const auto metrics = f.queue.metrics();
  EXPECT_EQ(metrics.name, "test");
  EXPECT_EQ(metrics.queue_latency.count, 1u);
  EXPECT_DOUBLE_EQ(metrics.queue_latency.sum_seconds, 2.0);
  EXPECT_EQ(metrics.queue_latency.counts[9], 1u);  // <= 10 s bucket
  EXPECT_EQ(metrics.work_duration.count, 1u);
  EXPECT_DOUBLE_EQ(metrics.work_duration.sum_seconds, 3.0);
  EXPECT_EQ(metrics.processing, 0u);
}

TEST(WorkQueueTest, ConcurrentWorkersNeverProcessOneKeyTwiceAtOnce) {
  QueueFixture f;
  constexpr int kKeys = 20;
  std::mutex mutex;
  std::set<ObjectKey> in_flight;
  std::atomic<bool> overlap{false};
  std::atomic<int> processed{0};
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto k = f.queue.get()) {
        {
          std::lock_guard lock(mutex);
          if (!in_flight.insert(*k).second) overlap = true;
        }
        f.queue.add(*k);  // re-added while in flight: must be parked
        {
          std::lock_guard lock(mutex);
          in_flight.erase(*k);
        }
        ++processed;
        f.queue.done(*k);
      }
    });
  }
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < kKeys; ++i) f.queue.add(key(fmt::format("k{}", i)));
  }
  f.queue.shut_down();
  workers.clear();  // joins; shut_down stops the re-adds, so the workers drain and end
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(processed.load(), kKeys);
}

}  // namespace
}  // namespace depl::kube
