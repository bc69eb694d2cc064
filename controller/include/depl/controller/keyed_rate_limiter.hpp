// Token buckets kept per key (a job, a peer address) that refuse rather than make the caller
// wait: the progress endpoint answers 429 and the worker retries later. The keys come from the
// network, so the map is bounded: a bucket that has refilled is indistinguishable from a new one
// and is dropped, and past `max_keys` the least recently used bucket goes.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "depl/common/clock.hpp"

namespace depl::controller {

struct KeyedRateLimit {
  double per_second = 1;  // refill rate of each key's bucket; must be > 0
  double burst = 1;       // bucket size; must be >= 1
  std::size_t max_keys = 10000;
  // How often full buckets are swept out; a sweep walks the whole map, so not on every call.
  Clock::Duration sweep_every = std::chrono::seconds(60);
};

// Thread-safe. Time is handed in by the caller (from its injected Clock).
class KeyedRateLimiter {
 public:
  explicit KeyedRateLimiter(KeyedRateLimit limit);

  // Takes one token from `key`'s bucket (a new key starts full); false when it is empty.
  bool allow(const std::string& key, Clock::TimePoint now);
  // Gives back a token taken by allow() (capped at the burst), for a request that turned out
  // not to count against this limit. A key no longer tracked is left alone: it would start full.
  void refund(const std::string& key);
  // How long from `now` until `key`'s bucket holds a token again (rounded up to the clock's
  // tick): zero when it holds one, or when the key is not tracked (it would start full). For a
  // Retry-After after allow() refused; it takes nothing and tracks no new key.
  Clock::Duration wait(const std::string& key, Clock::TimePoint now) const;

  // Number of buckets held, for tests and metrics.
  std::size_t size() const;

 private:
  struct Bucket {
    double tokens = 0;
    Clock::TimePoint last{};
  };
  double refilled(const Bucket& b, Clock::TimePoint now) const;
  void sweep(Clock::TimePoint now);  // drops full buckets; mutex_ held
  void evict_oldest();               // mutex_ held

  KeyedRateLimit limit_;
  mutable std::mutex mutex_;
  std::map<std::string, Bucket> buckets_;
  Clock::TimePoint last_sweep_{};
};

}  // namespace depl::controller
