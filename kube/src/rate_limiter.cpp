#include "depl/kube/rate_limiter.hpp"

#include <algorithm>

namespace depl::kube {

TokenBucket::TokenBucket(RateLimit limit, TimePoint start)
    : limit_(limit), tokens_(std::max(1, limit.burst)), last_(start) {}

std::chrono::nanoseconds TokenBucket::reserve(TimePoint now) {
  if (limit_.qps <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard lock(mutex_);
  const double burst = std::max(1, limit_.burst);
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst, tokens_ + elapsed * limit_.qps);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  // The caller's token arrives once the debt (including earlier callers') is repaid.
  return std::chrono::nanoseconds(static_cast<long long>(-tokens_ / limit_.qps * 1e9 + 0.5));
}

}  // namespace depl::kube
