// The work-queue rate limiters; see the header for the policy.
#include "depl/kube/runtime/queue_rate_limiter.hpp"

#include <algorithm>
#include <cmath>

namespace depl::kube {

ItemExponentialRateLimiter::ItemExponentialRateLimiter(std::chrono::nanoseconds base,
                                                       std::chrono::nanoseconds max)
    : base_(base), max_(max) {}

std::chrono::nanoseconds ItemExponentialRateLimiter::when(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  const int exponent = failures_[key]++;
  // Doubling in floating point cannot overflow; the cap keeps the result representable.
  const double delay = static_cast<double>(base_.count()) * std::pow(2.0, exponent);
  if (delay >= static_cast<double>(max_.count())) return max_;
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(delay));
}

void ItemExponentialRateLimiter::forget(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int ItemExponentialRateLimiter::num_requeues(const ObjectKey& key) {
  std::lock_guard lock(mutex_);
  const auto found = failures_.find(key);
  return found == failures_.end() ? 0 : found->second;
}

BucketRateLimiter::BucketRateLimiter(Clock& clock, RateLimit limit)
    : clock_(clock), bucket_(limit, clock.now()) {}

std::chrono::nanoseconds BucketRateLimiter::when(const ObjectKey&) {
  return bucket_.reserve(clock_.now());
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<QueueRateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

std::chrono::nanoseconds MaxOfRateLimiter::when(const ObjectKey& key) {
  std::chrono::nanoseconds longest{0};
  // Every limiter is asked (each call is one failure for it), not just until the first wins.
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->when(key));
  return longest;
}

void MaxOfRateLimiter::forget(const ObjectKey& key) {
  for (const auto& limiter : limiters_) limiter->forget(key);
}

int MaxOfRateLimiter::num_requeues(const ObjectKey& key) {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->num_requeues(key));
  return most;
}

std::unique_ptr<QueueRateLimiter> default_controller_rate_limiter(Clock& clock) {
  std::vector<std::unique_ptr<QueueRateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                                  std::chrono::seconds(1000)));
  limiters.push_back(std::make_unique<BucketRateLimiter>(clock, RateLimit{10, 100}));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace depl::kube
