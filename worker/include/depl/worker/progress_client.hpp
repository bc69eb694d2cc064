// The worker's side of the operator's progress protocol: after each epoch rank 0 POSTs
// {"phase","rank","epoch","loss"} to DEPL_PROGRESS_URL with "Authorization: Bearer <token>" and
// the controller answers {"action": "continue" | "checkpointAndExit"}. A small blocking HTTP/1.1
// client (Beast stays inside the .cpp); connection errors, timeouts, 5xx and 429 are retried
// with exponential backoff until a deadline of minutes, so a report outlasts a controller restart;
// any other 4xx is final. A 429 or 503 with Retry-After is retried no sooner than it asks (up to
// kMaxRetryAfter).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "depl/common/expected.hpp"

namespace depl::worker {

enum class ProgressAction { Continue, CheckpointAndExit };

struct ProgressReport {
  int phase = 0;
  int rank = 0;
  int epoch = 0;
  double loss = 0.0;
};

struct ProgressError {
  std::string message;
  // The endpoint refused the report (4xx): retrying cannot help. Otherwise the endpoint did not
  // take it within the retry deadline (unreachable, or answering 5xx/429 throughout).
  bool rejected = false;
  // The last answer's Retry-After (429 or 503), for a caller that retries on its own.
  std::optional<std::chrono::seconds> retry_after;
};

// The longest wait a Retry-After gets: an endpoint that asks for more (broken or hostile) cannot
// park the worker for longer than this per attempt.
inline constexpr std::chrono::seconds kMaxRetryAfter{60};

// How long a report is retried by default (DEPL_PROGRESS_RETRY_SECONDS overrides it): long
// enough for a controller to be rescheduled, pull its image and sync its caches.
inline constexpr std::chrono::seconds kDefaultProgressRetry{300};

// The exit code of a worker that gave up because the progress endpoint did not take its report
// within the retry deadline (EX_TEMPFAIL of sysexits.h). The controller restarts the phase from
// its checkpoint without counting a failure (docs/worker-contract.md, section 3).
inline constexpr int kExitProgressUnreachable = 75;

struct ProgressClientOptions {
  std::string url;    // http://host[:port]/path
  std::string token;  // sent as a bearer token
  // Transient failures are retried until this long after the first attempt; the last attempt is
  // made at the deadline.
  std::chrono::milliseconds retry_for{kDefaultProgressRetry};
  // Doubles after each failed attempt up to max_backoff; a longer Retry-After on 429 or 503 is
  // waited instead.
  std::chrono::milliseconds first_backoff{200};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(10)};
  std::chrono::milliseconds timeout{std::chrono::seconds(10)};  // per attempt
  // Waits between attempts, and the clock the deadline is read on; injectable so tests of the
  // retry path need not sleep (a test's sleep moves its clock on).
  std::function<void(std::chrono::milliseconds)> sleep;
  std::function<std::chrono::steady_clock::time_point()> now;
};

// DEPL_PROGRESS_RETRY_SECONDS: the retry deadline in whole seconds (0: one attempt), or the
// default when `text` is empty. The error names the variable.
Expected<std::chrono::milliseconds> parse_progress_retry(const std::string& text);

// The request body for a report (exactly the four fields of the contract).
std::string progress_request_body(const ProgressReport& report);

// A Retry-After value in its delay-seconds form (RFC 9110 §10.2.3: digits, a whole number of
// seconds); nothing for anything else, the HTTP-date form included. A number too large for the
// type reads as seconds::max().
std::optional<std::chrono::seconds> parse_retry_after(std::string_view value);

// How long to wait before the next attempt: the backoff, or the endpoint's Retry-After when it
// asks for longer, but never more than kMaxRetryAfter.
std::chrono::milliseconds wait_before_retry(std::chrono::milliseconds backoff,
                                            std::optional<std::chrono::seconds> retry_after);

// Reads the controller's answer; anything but a JSON object with a known "action" is an error.
Expected<ProgressAction> parse_progress_response(std::string_view body);

class ProgressClient {
 public:
  // Fails on a URL that is not http://host[:port]/path.
  static Expected<ProgressClient> create(ProgressClientOptions options);
  ProgressClient(ProgressClient&&) noexcept;
  ProgressClient& operator=(ProgressClient&&) noexcept;
  ~ProgressClient();

  Expected<ProgressAction, ProgressError> post(const ProgressReport& report);

 private:
  struct Impl;
  explicit ProgressClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace depl::worker
