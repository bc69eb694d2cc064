// Client-side request rate limiting: a token bucket (client-go's flowcontrol limiter) that
// admits `burst` requests at once and `qps` per second on average. Pure arithmetic on time
// points handed in by the caller, so tests drive it with a fake clock.
#pragma once

#include <chrono>
#include <mutex>

namespace depl::kube {

struct RateLimit {
  double qps = 20;  // <= 0 disables limiting
  int burst = 40;
};

class TokenBucket {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  TokenBucket(RateLimit limit, TimePoint start);
  // Takes one token and returns how long the caller must wait before sending (0 when a token
  // was available). Reservations queue up: the tokens of concurrent callers never overlap.
  // Thread-safe.
  std::chrono::nanoseconds reserve(TimePoint now);

 private:
  RateLimit limit_{};
  std::mutex mutex_{};
  double tokens_{};   // may go negative: tokens promised to callers still waiting
  TimePoint last_{};  // when tokens_ was last brought up to date
};

}  // namespace depl::kube
