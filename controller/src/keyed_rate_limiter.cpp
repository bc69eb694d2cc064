#include "depl/controller/keyed_rate_limiter.hpp"

#include <algorithm>
#include <cassert>

namespace depl::controller {

KeyedRateLimiter::KeyedRateLimiter(KeyedRateLimit limit) : limit_(limit) {
  assert(limit_.per_second > 0 && limit_.burst >= 1 && limit_.max_keys >= 1);
}

double KeyedRateLimiter::refilled(const Bucket& b, Clock::TimePoint now) const {
  if (now <= b.last) return b.tokens;
  const double elapsed = std::chrono::duration<double>(now - b.last).count();
  return std::min(limit_.burst, b.tokens + elapsed * limit_.per_second);
}

void KeyedRateLimiter::sweep(Clock::TimePoint now) {
  last_sweep_ = now;
  std::erase_if(buckets_,
                [&](const auto& entry) { return refilled(entry.second, now) >= limit_.burst; });
}

void KeyedRateLimiter::evict_oldest() {
  auto oldest =
      std::min_element(buckets_.begin(), buckets_.end(),
                       [](const auto& a, const auto& b) { return a.second.last < b.second.last; });
  if (oldest != buckets_.end()) buckets_.erase(oldest);
}

bool KeyedRateLimiter::allow(const std::string& key, Clock::TimePoint now) {
  std::lock_guard lock(mutex_);
  if (last_sweep_ == Clock::TimePoint{} || now - last_sweep_ >= limit_.sweep_every) sweep(now);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= limit_.max_keys) {
      // Full buckets carry no state, so drop those first; only then forget a live one (the
      // least recently used), which can only make that key's limit more lenient.
      sweep(now);
      if (buckets_.size() >= limit_.max_keys) evict_oldest();
    }
    it = buckets_.emplace(key, Bucket{limit_.burst, now}).first;
  }
  Bucket& b = it->second;
  b.tokens = refilled(b, now);
  b.last = std::max(b.last, now);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void KeyedRateLimiter::refund(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) return;
  it->second.tokens = std::min(limit_.burst, it->second.tokens + 1);
}

Clock::Duration KeyedRateLimiter::wait(const std::string& key, Clock::TimePoint now) const {
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) return Clock::Duration::zero();
  const Bucket& b = it->second;
  // A bucket last touched after `now` (a caller with an older reading of the clock) refills
  // only from then on.
  const Clock::TimePoint from = std::max(now, b.last);
  const double missing = 1 - refilled(b, from);
  if (missing <= 0) return Clock::Duration::zero();
  return (from - now) + std::chrono::ceil<Clock::Duration>(
                            std::chrono::duration<double>(missing / limit_.per_second));
}

std::size_t KeyedRateLimiter::size() const {
  std::lock_guard lock(mutex_);
  return buckets_.size();
}

}  // namespace depl::controller
