// When and how long to wait before retrying a request: jittered exponential backoff on
// connection errors, 429 and 5xx, honouring Retry-After. Which verbs may be retried is decided
// here and nowhere else (see is_retryable).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include "depl/common/random.hpp"
#include "depl/kube/api_error.hpp"

namespace depl::kube {

struct RetryPolicy {
  int max_attempts = 5;  // total tries, including the first; 1 disables retries
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{10'000};
  double jitter = 0.5;  // delay *= 1 + jitter * U[0,1)
  // Retry-After larger than this is not waited for: the error goes back to the caller.
  std::chrono::seconds max_retry_after{60};
};

// Whether `error`, the outcome of one attempt of `method`, may be retried.
//  - GET, PUT and DELETE are retried on connection errors, timeouts, 429 and 5xx. They are
//    idempotent: a repeated PUT carries the same resourceVersion (a duplicate gets 409), a
//    repeated DELETE gets 404 or the same result.
//  - POST and PATCH are never retried after the request may have reached the server (a create
//    or a JSON patch applied twice is not the same as once); they are retried only when the
//    connection could not be established (ApiError reason ConnectFailed: nothing was sent).
bool is_retryable(std::string_view method, const ApiError& error);

// Delays between attempts. Thread-safe (RandomSource is).
class Backoff {
 public:
  // `random` null: a generator seeded from std::random_device.
  Backoff(RetryPolicy policy, std::shared_ptr<RandomSource> random);
  // Delay before attempt number `retry` + 1 (retry = 1 for the first retry): Retry-After when
  // the error carries one, else initial * 2^(retry-1) capped at max, with jitter.
  std::chrono::milliseconds delay(int retry, const ApiError& error);
  const RetryPolicy& policy() const { return policy_; }

 private:
  RetryPolicy policy_{};
  std::shared_ptr<RandomSource> random_{};
};

}  // namespace depl::kube
