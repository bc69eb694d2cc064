#include "depl/kube/retry_policy.hpp"

#include <algorithm>
#include <cmath>

namespace depl::kube {

bool is_retryable(std::string_view method, const ApiError& error) {
  const bool transient = error.code == 0 ? (error.reason == ApiError::kConnectFailed ||
                                            error.reason == ApiError::kTransportError ||
                                            error.reason == ApiError::kTimeout)
                                         : (error.code == 429 || error.code >= 500);
  if (!transient) return false;
  if (method == "GET" || method == "PUT" || method == "DELETE" || method == "HEAD") return true;
  // POST/PATCH: only when the request provably never left this process.
  return error.code == 0 && error.reason == ApiError::kConnectFailed;
}

Backoff::Backoff(RetryPolicy policy, std::shared_ptr<RandomSource> random)
    : policy_(policy),
      random_(random ? std::move(random)
                     : std::make_shared<RandomSource>(RandomSource::from_entropy())) {}

std::chrono::milliseconds Backoff::delay(int retry, const ApiError& error) {
  if (error.retry_after) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(*error.retry_after);
  }
  const double base =
      static_cast<double>(policy_.initial_backoff.count()) * std::pow(2.0, std::max(0, retry - 1));
  const double capped = std::min(base, static_cast<double>(policy_.max_backoff.count()));
  const double jittered = capped * (1.0 + policy_.jitter * random_->uniform());
  return std::chrono::milliseconds(static_cast<long long>(jittered));
}

}  // namespace depl::kube
