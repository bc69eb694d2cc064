// How long a failed work item waits before it is retried (client-go's workqueue rate
// limiters). The default is controller-runtime's: the maximum of a per-item exponential
// backoff (5 ms doubling to 1000 s) and an overall token bucket (10/s, burst 100) that keeps a
// storm of failing items from hammering the API server.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "depl/common/clock.hpp"
#include "depl/kube/rate_limiter.hpp"
#include "depl/kube/runtime/object_key.hpp"

namespace depl::kube {

// Implementations are thread-safe.
class QueueRateLimiter {
 public:
  virtual ~QueueRateLimiter() = default;
  // The delay before `key` may be retried; each call counts as one more failure.
  virtual std::chrono::nanoseconds when(const ObjectKey& key) = 0;
  // The item succeeded: its failure history is cleared.
  virtual void forget(const ObjectKey& key) = 0;
  // Failures counted since the last forget().
  virtual int num_requeues(const ObjectKey& key) = 0;
};

// base * 2^failures, capped at max.
class ItemExponentialRateLimiter final : public QueueRateLimiter {
 public:
  ItemExponentialRateLimiter(std::chrono::nanoseconds base, std::chrono::nanoseconds max);
  std::chrono::nanoseconds when(const ObjectKey& key) override;
  void forget(const ObjectKey& key) override;
  int num_requeues(const ObjectKey& key) override;

 private:
  std::chrono::nanoseconds base_;
  std::chrono::nanoseconds max_;
  std::mutex mutex_;
  std::unordered_map<ObjectKey, int, ObjectKeyHash> failures_;
};

// One token bucket shared by all items: the delay until the next token (reservations queue up).
class BucketRateLimiter final : public QueueRateLimiter {
 public:
  BucketRateLimiter(Clock& clock, RateLimit limit);
  std::chrono::nanoseconds when(const ObjectKey& key) override;
  void forget(const ObjectKey&) override {}
  int num_requeues(const ObjectKey&) override { return 0; }

 private:
  Clock& clock_;
  TokenBucket bucket_;
};

// The longest delay of all its limiters; forget() and num_requeues() reach all of them.
class MaxOfRateLimiter final : public QueueRateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<QueueRateLimiter>> limiters);
  std::chrono::nanoseconds when(const ObjectKey& key) override;
  void forget(const ObjectKey& key) override;
  int num_requeues(const ObjectKey& key) override;

 private:
  std::vector<std::unique_ptr<QueueRateLimiter>> limiters_;
};

// controller-runtime's DefaultControllerRateLimiter. `clock` must outlive the limiter.
std::unique_ptr<QueueRateLimiter> default_controller_rate_limiter(Clock& clock);

}  // namespace depl::kube
